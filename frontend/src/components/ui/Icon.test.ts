import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { iconPath } from "./Icon";

describe("icons drawn by CSS", () => {
  it("use the same paths as the inline icons", () => {
    // Vitest runs from the PWA's folder (frontend/).
    const css = readFileSync(resolve(process.cwd(), "src/styles/chat-blocks.css"), "utf8");
    const glyph = (selector: string) => {
      const rule = css.slice(css.indexOf(`${selector} {`));
      return /path d='([^']*)'/.exec(rule.slice(0, rule.indexOf("}")))?.[1];
    };
    expect(glyph(".tool-glyph-terminal")).toBe(iconPath("terminal"));
    expect(glyph(".tool-chevron.tool-glyph")).toBe(iconPath("chevron"));
  });
});
