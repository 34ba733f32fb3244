import { describe, expect, it } from "vitest";
import { slashMatches } from "./slash";

describe("slash commands", () => {
  it("lists every command on a bare slash and narrows as the name is typed", () => {
    expect(slashMatches("/").map((c) => c.name)).toEqual(["/goal", "/plan", "/compact"]);
    expect(slashMatches("/g").map((c) => c.name)).toEqual(["/goal"]);
    expect(slashMatches("/P").map((c) => c.name)).toEqual(["/plan"]);
  });

  it("offers nothing once the command is whole, words follow, or the text is not a command", () => {
    expect(slashMatches("/goal")).toEqual([]);
    expect(slashMatches("/goal ship it")).toEqual([]);
    expect(slashMatches("/x")).toEqual([]);
    expect(slashMatches("hello /goal")).toEqual([]);
    expect(slashMatches("")).toEqual([]);
  });
});
