import { describe, expect, it } from "vitest";
import type { Block, FileDiff } from "../api/types";
import { countsText, filesChanged, foldContext, languageOfPath, leadingRows, parseDiff } from "./diff";

const lines = (n: number, prefix = " ") => Array.from({ length: n }, (_, i) => `${prefix}line ${i}`).join("\n");

describe("parseDiff", () => {
  it("reads added, removed, unchanged lines and hunk starts", () => {
    expect(parseDiff("@@ -1 +1 @@\n keep\n-old\n+new\nbare\n")).toEqual([
      { kind: "hunk", text: "@@ -1 +1 @@" },
      { kind: "ctx", text: "keep" },
      { kind: "del", text: "old" },
      { kind: "add", text: "new" },
      { kind: "ctx", text: "bare" },
    ]);
    expect(parseDiff("")).toEqual([]);
  });
});

describe("foldContext", () => {
  it("folds a long unchanged stretch between changes to three lines each side", () => {
    const parsed = parseDiff(`+a\n${lines(20)}\n-b\n`);
    const rows = foldContext(parsed);
    const fold = rows.find((r) => r.type === "fold");
    expect(fold?.type === "fold" && fold.lines.length).toBe(14);
    expect(rows).toHaveLength(1 + 3 + 1 + 3 + 1);
    // Expanded, every line is back.
    expect(foldContext(parsed, new Set([fold?.type === "fold" ? fold.id : -1]))).toHaveLength(22);
  });

  it("keeps only the side next to a change at the start and the end, and short stretches whole", () => {
    const rows = foldContext(parseDiff(`${lines(10)}\n+x\n${lines(10)}\n`));
    expect(rows.map((r) => r.type)).toEqual(["fold", "line", "line", "line", "line", "line", "line", "line", "fold"]);
    expect(foldContext(parseDiff(" a\n b\n+c\n"))).toHaveLength(3);
  });
});

describe("leadingRows", () => {
  it("gives the first rows exactly as the whole diff's fold has them, however the lines fall", () => {
    // Stretches of unchanged lines of every length, at the start, between changes and at the end
    // (a cut inside a long one must not fold it as if it ended there), a fold opened or not.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const parts: string[] = [];
      for (let k = next(8); k >= 0; k--) {
        const kind = next(4);
        const n = 1 + next(kind === 0 ? 300 : 12);
        parts.push(kind === 0 || kind === 1 ? lines(n) : kind === 2 ? lines(n, "+") : lines(n, "-"));
      }
      const diff = `${parts.join("\n")}${next(2) ? "\n" : ""}`;
      const full = foldContext(parseDiff(diff));
      const fold = full.find((r) => r.type === "fold");
      const open = new Set(next(2) && fold?.type === "fold" ? [fold.id] : []);
      const opened = foldContext(parseDiff(diff), open);
      for (const count of [1, 5, 20]) {
        const { rows, whole } = leadingRows(diff, count, open);
        expect(rows).toEqual(opened.slice(0, count));
        if (whole) expect(opened.length).toBeLessThanOrEqual(count);
        else expect(opened.length).toBeGreaterThanOrEqual(count);
      }
    }
    expect(leadingRows("", 20)).toEqual({ rows: [], whole: true });
  });

  it("says when there is more than the rows asked for", () => {
    const long = `${lines(30, "+")}\n${"@@ -1 +1 @@\n".repeat(10_000)}`;
    const { rows, whole } = leadingRows(long, 20);
    expect(whole).toBe(false);
    expect(rows.map((r) => r.type === "line" && r.line.kind)).toEqual(Array(20).fill("add"));
    expect(leadingRows(long, 40).rows.slice(30).map((r) => r.type === "line" && r.line.kind)).toEqual(Array(10).fill("hunk"));
  });
});

describe("languageOfPath", () => {
  it("picks the language by extension or name", () => {
    expect(languageOfPath("apps/notes/src/App.tsx")).toBe("typescript");
    expect(languageOfPath("Dockerfile")).toBe("dockerfile");
    expect(languageOfPath("README")).toBeNull();
    expect(languageOfPath(".env")).toBeNull();
  });
});

describe("filesChanged", () => {
  const diff = (path: string, added: number, removed: number): FileDiff => ({ path, change: "update", added, removed, diff: "" });
  const tool = (id: string, files: FileDiff[], status: "done" | "error" = "done"): Block => ({ type: "tool", tool: "Edit", tool_use_id: id, input: "", output: "", status, files });

  it("sums each file's edits in the order first touched, leaving failed edits out", () => {
    const changed = filesChanged([
      tool("t1", [diff("b.rs", 2, 1)]),
      { type: "text", content: "hi", item_id: "x" },
      tool("t2", [diff("a.rs", 5, 0), diff("b.rs", 1, 1)]),
      tool("t3", [diff("c.rs", 9, 9)], "error"),
    ]);
    expect(changed.map((f) => [f.path, f.added, f.removed, f.edits.length])).toEqual([
      ["b.rs", 3, 2, 2],
      ["a.rs", 5, 0, 1],
    ]);
    expect(filesChanged([{ type: "tool", tool: "Bash", tool_use_id: "b", input: "ls", output: "", status: "done" }])).toEqual([]);
    expect(countsText(1200, 3)).toBe("+1,200 \u22123");
  });
});
