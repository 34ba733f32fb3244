import { describe, expect, it } from "vitest";
import { loadAnchor, loadDraft, MAX_ANCHORS, saveAnchor, saveDraft, wipeOwnerData } from "./persist";

describe("per-owner persistence", () => {
  it("keeps drafts per owner and chat, and an empty draft removes the key", () => {
    saveDraft("ada", "c1", "half a thought");
    expect(loadDraft("ada", "c1")).toBe("half a thought");
    expect(loadDraft("bob", "c1")).toBe("");
    saveDraft("ada", "c1", "");
    expect(localStorage.length).toBe(0);
  });

  it("keeps at most MAX_ANCHORS reading positions, newest first", () => {
    for (let i = 0; i <= MAX_ANCHORS; i++) saveAnchor("ada", `c${i}`, { key: "k", offset: i }, i);
    expect(loadAnchor("ada", "c0")).toBeNull();
    expect(loadAnchor("ada", `c${MAX_ANCHORS}`)).toEqual({ key: "k", offset: MAX_ANCHORS });
  });

  it("sign-out wipes owner data but keeps device preferences", () => {
    saveDraft("ada", "c1", "secret");
    saveAnchor("ada", "c1", { key: "k", offset: 1 });
    localStorage.setItem("mobius.theme", "dark");
    wipeOwnerData();
    expect(loadDraft("ada", "c1")).toBe("");
    expect(loadAnchor("ada", "c1")).toBeNull();
    expect(localStorage.getItem("mobius.theme")).toBe("dark");
  });
});
