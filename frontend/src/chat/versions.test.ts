import { describe, expect, it } from "vitest";
import type { Row } from "./reducer";
import { versionRows } from "./versions";

let n = 0;
const user = (text: string): Row => ({ key: `u${n++}`, idx: n, live: false, message: { role: "user", content: text, ts: n } });
const reply = (text: string, version?: number, extra: Partial<Row> = {}): Row => {
  const key = `a${n++}`;
  const message: Row["message"] = { role: "assistant", content: text, ts: n, blocks: [{ type: "text", content: text, item_id: key }] };
  if (version !== undefined) message.version = version;
  return { key, idx: n, live: false, message, ...extra };
};
const handoff = (): Row => ({
  key: `h${n++}`,
  idx: n,
  live: false,
  message: {
    role: "assistant",
    content: "",
    ts: n,
    blocks: [{ type: "handoff", switch_id: "s", from_provider: "claude", to_provider: "claude", reason: "compact", summary: "s", summarized_by: "provider" }],
  },
});
const texts = (rows: Row[]) => rows.map((r) => r.message.content);

describe("versions of a reply", () => {
  it("leaves a transcript without regenerated replies as it is", () => {
    const rows = [user("q"), reply("a"), reply("b"), user("q2"), reply("c")];
    const view = versionRows(rows, new Map());
    expect(texts(view.rows)).toEqual(["q", "a", "b", "q2", "c"]);
    expect(view.switches.size).toBe(0);
  });

  it("shows the newest version of a regenerated reply with a switcher on its last row, and the chosen one when picked", () => {
    const q = user("q");
    const rows = [q, reply("first"), reply("first, continued"), reply("second", 2), reply("third", 3), reply("third, continued")];
    const latest = versionRows(rows, new Map());
    expect(texts(latest.rows)).toEqual(["q", "third", "third, continued"]);
    const last = latest.rows.at(-1) as Row;
    expect(latest.switches.get(last.key)).toEqual({ group: q.key, shown: 3, count: 3 });
    const first = versionRows(rows, new Map([[q.key, 1]]));
    expect(texts(first.rows)).toEqual(["q", "first", "first, continued"]);
    expect(first.switches.get((first.rows.at(-1) as Row).key)?.shown).toBe(1);
  });

  it("keeps the versions of each owner message apart, and a handoff marker outside any reply", () => {
    const rows = [user("q1"), reply("a1"), reply("a2", 2), handoff(), user("q2"), reply("b1")];
    const view = versionRows(rows, new Map());
    expect(texts(view.rows)).toEqual(["q1", "a2", "", "q2", "b1"]);
    expect(view.switches.size).toBe(1);
  });

  it("shows the version that holds a search hit", () => {
    const q = user("q");
    const old = reply("old");
    const rows = [q, old, reply("new", 2)];
    expect(texts(versionRows(rows, new Map(), old.idx ?? null).rows)).toEqual(["q", "old"]);
  });

  it("shows the live row of a regenerating turn as the newest version", () => {
    const rows = [user("q"), reply("old"), reply("", 2, { live: true })];
    const view = versionRows(rows, new Map());
    expect(view.rows.map((r) => r.live)).toEqual([false, true]);
  });

  it("falls back to the newest version when the chosen one is not on the loaded pages", () => {
    const q = user("q");
    const rows = [q, reply("second", 2), reply("third", 3)];
    expect(texts(versionRows(rows, new Map([[q.key, 1]])).rows)).toEqual(["q", "third"]);
  });
});
