import { describe, expect, it } from "vitest";
import { plainText } from "./plainText";

describe("plainText", () => {
  it("drops emphasis, code marks and link targets", () => {
    expect(plainText("**Done.** See `src/app.ts` and [the docs](https://example.com).")).toBe("Done. See src/app.ts and the docs.");
  });
  it("drops headings, lists, quotes and fences, on one line", () => {
    expect(plainText("## Summary\n- one *item*\n- two\n1. three")).toBe("Summary one item two three");
    expect(plainText("```js\nconsole.log(1)\n```")).toBe("console.log(1)");
    expect(plainText("> **All** tests `pass`.")).toBe("All tests pass.");
  });
  it("keeps underscores in names and a lone asterisk", () => {
    expect(plainText("a_snake_case name, 2 * 3 = 6 ![shot](x.png)")).toBe("a_snake_case name, 2 * 3 = 6 shot");
  });
});
