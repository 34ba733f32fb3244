import { describe, expect, it } from "vitest";
import type { ChatPage, StreamEvent, ToolBlock } from "../api/types";
import { chatReducer, emptyChat, fromDetail, queueOf, rowsOf, toDetail, type ChatState } from "./reducer";

function detail(overrides: Partial<ChatPage> = {}): ChatPage {
  return {
    id: "c1",
    title: "Chat",
    provider: "claude",
    messages: [],
    offset: 0,
    total: 0,
    has_more: false,
    running: false,
    run_id: null,
    pending_question_id: null,
    pending_messages: [],
    seq: 10,
    ...overrides,
  };
}

let seq = 10;
const ev = (event: Record<string, unknown>): StreamEvent => ({ seq: ++seq, ...event }) as StreamEvent;
const fold = (state: ChatState, ...events: StreamEvent[]) =>
  events.reduce((s, event) => chatReducer(s, { type: "event", event, now: 1000 }), state);

function started(): ChatState {
  seq = 10;
  return fold(fromDetail(detail()), ev({ type: "run_started", run_id: "r1" }));
}

describe("stream reducer", () => {
  it("puts what a turn used on its reply, and a handoff's marker in the transcript with its provider", () => {
    let s = fold(started(), ev({ type: "text", item_id: "t", content: "hi" }));
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed", usage: { input_tokens: 5, output_tokens: 7, cache_read_tokens: null, cache_write_tokens: null }, cost_usd: 0.01 }));
    expect(s.messages.at(-1)?.usage).toEqual({ input_tokens: 5, output_tokens: 7, cost_usd: 0.01 });
    const card = { type: "handoff", switch_id: "sw", from_provider: "claude", to_provider: "codex", reason: "switch", summary: "S", summarized_by: "provider" };
    s = fold(s, ev({ type: "handoff", message: { role: "assistant", content: "", ts: 2, blocks: [card] } }));
    expect(s.messages.at(-1)?.blocks).toEqual([card]);
    expect(s.provider).toBe("codex");
    expect(s.total).toBe(2);
  });

  it("shows the CLI's retries until the next event, and keeps an error's fix", () => {
    let s = fold(started(), ev({ type: "retrying", attempt: 2, max_retries: 10, reason: "overloaded" }));
    expect(s.retry).toEqual({ attempt: 2, max_retries: 10, reason: "overloaded" });
    expect(s.live?.blocks).toEqual([]);
    s = fold(s, ev({ type: "text", item_id: "t", content: "hi" }));
    expect(s.retry).toBeNull();
    s = fold(s, ev({ type: "error", message: "Anthropic refused the API key", resumable: false, fix: "provider_settings" }));
    expect(s.live?.blocks?.at(-1)).toEqual({ type: "error", message: "Anthropic refused the API key", resumable: false, fix: "provider_settings" });
  });

  it("shows that a turn waits for a free agent until it works, across the queue changing and a reload", () => {
    let s = fold(started(), ev({ type: "waiting", busy: 3, limit: 3 }));
    expect(s.waiting).toEqual({ busy: 3, limit: 3 });
    s = fold(s, ev({ type: "queue_changed", pending: [] }));
    // A message queued meanwhile does not start it.
    expect(s.waiting).toEqual({ busy: 3, limit: 3 });
    const reloaded = fromDetail(toDetail(s));
    expect(reloaded.waiting).toEqual({ busy: 3, limit: 3 });
    expect(fromDetail(detail({ running: true, run_id: "r1", waiting: { busy: 4, limit: 4 } })).waiting).toEqual({ busy: 4, limit: 4 });
    expect(fromDetail(detail({ running: false, waiting: { busy: 4, limit: 4 } })).waiting).toBeNull();
    s = fold(s, ev({ type: "thinking", item_id: "k", content: "…" }));
    expect(s.waiting).toBeNull();
  });

  it("starts an empty live assistant message on run_started", () => {
    const s = started();
    expect(s.running).toBe(true);
    expect(s.live).toMatchObject({ role: "assistant", run_id: "r1", blocks: [] });
    expect(s.seq).toBe(11);
  });

  it("appends text by item_id and starts a new block for a new item", () => {
    const s = fold(
      started(),
      ev({ type: "text", item_id: "t1", content: "Hel" }),
      ev({ type: "text", item_id: "t1", content: "lo" }),
      ev({ type: "text", item_id: "t2", content: "More" }),
    );
    expect(s.live?.blocks).toEqual([
      { type: "text", item_id: "t1", content: "Hello" },
      { type: "text", item_id: "t2", content: "More" },
    ]);
  });

  it("text_final replaces the block's text, and creates it when missing", () => {
    const s = fold(
      started(),
      ev({ type: "text", item_id: "t1", content: "Helo wrld" }),
      ev({ type: "text_final", item_id: "t1", content: "Hello world" }),
      ev({ type: "text_final", item_id: "t9", content: "Fresh" }),
    );
    expect(s.live?.blocks).toEqual([
      { type: "text", item_id: "t1", content: "Hello world" },
      { type: "text", item_id: "t9", content: "Fresh" },
    ]);
  });

  it("appends thinking to its own block", () => {
    const s = fold(started(), ev({ type: "thinking", item_id: "k", content: "a" }), ev({ type: "thinking", item_id: "k", content: "b" }));
    expect(s.live?.blocks).toEqual([{ type: "thinking", item_id: "k", content: "ab" }]);
  });

  it("folds a tool's start, output (set, append, truncation) and end", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "u1", tool: "Bash", input: "ls" }));
    expect(s.live?.blocks?.[0]).toMatchObject({ type: "tool", status: "running", output: "" });
    s = fold(
      s,
      ev({ type: "tool_output", tool_use_id: "u1", content: "a\n" }),
      ev({ type: "tool_output", tool_use_id: "u1", content: "b\n", append: true, output_truncated: true, output_full_len: 9000, output_exit_code: 0 }),
      ev({ type: "tool_end", tool_use_id: "u1", is_error: false }),
    );
    expect(s.live?.blocks?.[0]).toEqual({
      type: "tool",
      tool: "Bash",
      tool_use_id: "u1",
      input: "ls",
      output: "a\nb\n",
      status: "done",
      output_truncated: true,
      output_full_len: 9000,
      output_exit_code: 0,
    });
    s = fold(s, ev({ type: "tool_start", tool_use_id: "u2", tool: "Read", input: "x" }), ev({ type: "tool_end", tool_use_id: "u2", is_error: true }));
    expect((s.live?.blocks?.[1] as ToolBlock).status).toBe("error");
    // Cut short by a steer's interrupt: stopped, not failed.
    s = fold(
      s,
      ev({ type: "tool_start", tool_use_id: "u3", tool: "Bash", input: "sleep 9" }),
      ev({ type: "tool_end", tool_use_id: "u3", is_error: true, interrupted: true }),
    );
    expect((s.live?.blocks?.[2] as ToolBlock).status).toBe("stopped");
  });

  it("adds a tool's images once each, as the server does", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "v1", tool: "Read", input: "shot.png" }));
    const url = "/api/chats/c1/media/tool-1.png";
    s = fold(s, ev({ type: "tool_image", tool_use_id: "v1", url }), ev({ type: "tool_image", tool_use_id: "v1", url }));
    s = fold(s, ev({ type: "tool_image", tool_use_id: "nope", url: "/api/chats/c1/media/x.png" }));
    expect((s.live?.blocks?.[0] as ToolBlock).images).toEqual([url]);
  });

  it("puts a tool's diffs on its block, as the server does", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "e1", tool: "Edit", input: "a.rs" }));
    const files = [{ path: "a.rs", change: "update" as const, added: 1, removed: 1, diff: "-a\n+b\n" }];
    s = fold(s, ev({ type: "tool_files", tool_use_id: "e1", files }), ev({ type: "tool_files", tool_use_id: "nope", files }));
    expect((s.live?.blocks?.[0] as ToolBlock).files).toEqual(files);
    expect(s.live?.blocks).toHaveLength(1);
  });

  it("fills in a tool's input when the CLI says it later (a Codex web search), as the server does", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "w1", tool: "WebSearch", input: "" }));
    s = fold(s, ev({ type: "tool_input", tool_use_id: "w1", input: "tokio select" }), ev({ type: "tool_input", tool_use_id: "nope", input: "x" }));
    expect(s.live?.blocks).toEqual([expect.objectContaining({ tool_use_id: "w1", input: "tokio select", status: "running" })]);
  });

  it("keeps a subagent's steps marked with its call, and the call with its agent type", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "a1", tool: "Agent", input: "Find it", subagent_type: "Explore" }));
    s = fold(s, ev({ type: "tool_start", tool_use_id: "r1", tool: "Read", input: "a.toml", parent_tool_use_id: "a1" }));
    s = fold(s, ev({ type: "tool_end", tool_use_id: "r1", is_error: false }));
    const [call, step] = (s.live?.blocks ?? []) as ToolBlock[];
    expect(call).toMatchObject({ tool: "Agent", subagent_type: "Explore", status: "running" });
    expect(call && "parent_tool_use_id" in call).toBe(false);
    expect(step).toMatchObject({ tool_use_id: "r1", parent_tool_use_id: "a1", status: "done" });
  });

  it("keeps one plan card a reply, updated in place as the agent works through it", () => {
    const steps = (a: string, b: string) => [
      { text: "Read the code", status: a },
      { text: "Fix the bug", status: b },
    ];
    let s = fold(started(), ev({ type: "plan", steps: steps("in_progress", "pending") }));
    s = fold(s, ev({ type: "text", item_id: "x", content: "Reading." }));
    s = fold(s, ev({ type: "plan", steps: steps("completed", "in_progress"), explanation: "Found it" }));
    const blocks = s.live?.blocks ?? [];
    expect(blocks.map((b) => b.type)).toEqual(["plan", "text"]);
    expect(blocks[0]).toEqual({ type: "plan", steps: steps("completed", "in_progress"), explanation: "Found it" });
    // The settled reply keeps it.
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed", usage: {}, cost_usd: null, error: null }));
    expect(s.messages.at(-1)?.blocks?.[0]).toMatchObject({ type: "plan" });
  });

  it("keeps the count of the steps a long plan leaves off its card, and drops it when the plan fits", () => {
    const steps = [{ text: "Step 1", status: "in_progress" }];
    const omitted = { pending: 10, in_progress: 0, completed: 0 };
    let s = fold(started(), ev({ type: "plan", steps, omitted }));
    expect(s.live?.blocks?.[0]).toEqual({ type: "plan", steps, omitted });
    s = fold(s, ev({ type: "plan", steps }));
    expect(s.live?.blocks?.[0]).toEqual({ type: "plan", steps });
  });

  it("pins a goal from the detail, follows it live, unpins it, and keeps it in the cached detail", () => {
    const goal = { objective: "Ship the dark mode", started_at: 5 };
    let s = fromDetail(detail({ goal }));
    expect(s.goal).toEqual(goal);
    const plan = { steps: [{ text: "Add the palette", status: "completed" }, { text: "Test it", status: "in_progress" }] };
    s = fold(s, ev({ type: "goal_changed", goal: { ...goal, plan } }));
    expect(s.goal?.plan?.steps[1]?.status).toBe("in_progress");
    expect(toDetail(s).goal).toEqual({ ...goal, plan });
    // A replayed (older) event changes nothing; the unpin does.
    const replay = { seq: 1, type: "goal_changed", goal } as StreamEvent;
    expect(chatReducer(s, { type: "event", event: replay }).goal).toEqual({ ...goal, plan });
    s = fold(s, ev({ type: "goal_changed", goal: null }));
    expect(s.goal).toBeNull();
    // A detail from before goals were kept has none.
    expect(fromDetail(detail()).goal).toBeNull();
  });

  it("shows the files of the owner's own message before the server confirms it", () => {
    const files = [{ name: "a.png", mime_type: "image/png", size: 3, preview: true }];
    const s = chatReducer(fromDetail(detail()), { type: "send_local", cid: "m1", content: "", ts: 5, attachments: files });
    expect(s.messages.at(-1)).toMatchObject({ role: "user", cid: "m1", attachments: files, sending: true });
  });

  it("adds one question card per question_id and answers_applied closes it", () => {
    const q = { type: "question", question_id: "q1", kind: "question", questions: [{ question: "Which?", header: "H", options: [{ label: "A" }], multi_select: false }] };
    let s = fold(started(), ev(q), ev(q));
    expect(s.live?.blocks?.filter((b) => b.type === "question")).toHaveLength(1);
    expect(s.pendingQuestionId).toBe("q1");
    s = fold(s, ev({ type: "answers_applied", question_id: "q1", answers: { "Which?": "A" } }));
    expect(s.live?.blocks?.[0]).toMatchObject({ answers: { "Which?": "A" } });
    expect(s.pendingQuestionId).toBeNull();
  });

  it("shows an approval card", () => {
    const s = fold(started(), ev({ type: "question", question_id: "a1", kind: "approval", tool: "Bash", input: "rm -rf build", reason: "cleanup" }));
    expect(s.live?.blocks?.[0]).toEqual({ type: "question", question_id: "a1", kind: "approval", tool: "Bash", input: "rm -rf build", reason: "cleanup" });
    expect(s.pendingQuestionId).toBe("a1");
  });

  it("folds a plan card and the owner's edited approval onto it, and the turn goes on", () => {
    let s = fold(started(), ev({ type: "question", question_id: "p1", kind: "plan", plan: "1. Read\n2. Write" }));
    expect(s.pendingQuestionId).toBe("p1");
    s = fold(s, ev({ type: "answers_applied", question_id: "p1", answers: { decision: "allow", plan: "1. Read\n2. Write tests" } }));
    expect(s.pendingQuestionId).toBeNull();
    expect(s.live?.blocks?.[0]).toMatchObject({ kind: "plan", plan: "1. Read\n2. Write", answers: { decision: "allow", plan: "1. Read\n2. Write tests" } });
    s = fold(s, ev({ type: "text", item_id: "t", content: "Writing." }));
    expect(s.running).toBe(true);
    expect(s.live?.blocks).toHaveLength(2);
  });

  it("promotes the live message into history at done as the same row (keyed by run_id)", () => {
    let s = fold(started(), ev({ type: "text", item_id: "t", content: "Hi" }), ev({ type: "tool_start", tool_use_id: "u", tool: "Bash", input: "x" }));
    const liveKey = rowsOf(s).at(-1)?.key;
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed" }));
    expect(s.live).toBeNull();
    expect(s.running).toBe(false);
    const rows = rowsOf(s);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.key).toBe(liveKey);
    expect(rows[0]?.message).toMatchObject({ role: "assistant", content: "Hi" });
    expect(rows[0]?.message.live).toBeUndefined();
    expect((rows[0]?.message.blocks?.[1] as ToolBlock).status).toBe("done");
  });

  it("a stopped turn marks running tools stopped; a failed one shows its error once", () => {
    let s = fold(started(), ev({ type: "tool_start", tool_use_id: "u", tool: "Bash", input: "x" }), ev({ type: "done", run_id: "r1", status: "stopped" }));
    expect((s.messages[0]?.blocks?.[0] as ToolBlock).status).toBe("stopped");
    s = fold(started(), ev({ type: "done", run_id: "r1", status: "failed", error: "model overloaded" }));
    expect(s.messages[0]?.blocks).toEqual([{ type: "error", message: "model overloaded" }]);
    expect(s.lastRun).toEqual({ runId: "r1", status: "failed", error: "model overloaded" });
  });

  it("an error event adds a trailing error block", () => {
    const s = fold(started(), ev({ type: "error", message: "boom", resumable: true }));
    expect(s.live?.blocks).toEqual([{ type: "error", message: "boom", resumable: true }]);
  });

  it("an error after the turn ended attaches to the last assistant message", () => {
    const s = fold(started(), ev({ type: "done", run_id: "r1", status: "completed" }), ev({ type: "error", message: "late" }));
    expect(s.messages[0]?.blocks).toEqual([{ type: "error", message: "late" }]);
  });

  it("dedupes user rows by cid (the optimistic row becomes the server's)", () => {
    let s = fromDetail(detail());
    s = chatReducer(s, { type: "send_local", cid: "m1", content: "hello", ts: 5 });
    expect(s.messages[0]).toMatchObject({ cid: "m1", sending: true });
    seq = 10;
    s = fold(s, ev({ type: "user_message", message: { role: "user", content: "hello", ts: 6, cid: "m1" } }));
    s = fold(s, ev({ type: "user_message", message: { role: "user", content: "hello", ts: 6, cid: "m1" } }));
    expect(s.messages).toEqual([{ role: "user", content: "hello", ts: 6, cid: "m1" }]);
  });

  it("replays are idempotent: an event at or below the cursor changes nothing", () => {
    const s = fold(started(), ev({ type: "text", item_id: "t", content: "once" }));
    const again = chatReducer(s, { type: "event", event: { type: "text", seq: s.seq, item_id: "t", content: "once" } });
    expect(again).toBe(s);
    const older = chatReducer(s, { type: "event", event: { type: "text", seq: 3, item_id: "t", content: "x" } });
    expect(older).toBe(s);
  });

  it("replaying a whole log twice yields the same state", () => {
    seq = 10;
    const log = [
      ev({ type: "user_message", message: { role: "user", content: "go", ts: 1, cid: "a" } }),
      ev({ type: "run_started", run_id: "r1" }),
      ev({ type: "text", item_id: "t", content: "x" }),
      ev({ type: "done", run_id: "r1", status: "completed" }),
    ];
    const once = fold(fromDetail(detail()), ...log);
    expect(fold(once, ...log)).toBe(once);
    expect(rowsOf(once).map((r) => r.key)).toEqual(["cid:a", "run:r1"]);
  });

  it("queue_changed replaces the queue; queued_turn_starting moves rows into the transcript", () => {
    let s = started();
    s = fold(s, ev({ type: "queue_changed", pending: [{ role: "user", ts: 1, cid: "q1", content: "next" }] }));
    expect(queueOf(s)).toEqual([{ role: "user", ts: 1, cid: "q1", content: "next", confirmed: true }]);
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed" }));
    s = fold(s, ev({ type: "queued_turn_starting", run_id: "r2", messages: [{ role: "user", content: "next", ts: 9, cid: "q1" }] }));
    expect(s.pending).toEqual([]);
    expect(s.running).toBe(true);
    expect(s.live?.run_id).toBe("r2");
    expect(rowsOf(s).map((r) => r.key)).toEqual(["run:r1", "cid:q1", "run:r2"]);
    // A run_started for the same run afterwards keeps the live row.
    const live = s.live;
    s = fold(s, ev({ type: "run_started", run_id: "r2" }));
    expect(s.live).toBe(live);
  });

  it("chat_renamed and chat_deleted", () => {
    const s = fold(started(), ev({ type: "chat_renamed", title: "New name" }), ev({ type: "chat_deleted" }));
    expect(s.title).toBe("New name");
    expect(s.deleted).toBe(true);
  });

  it("resync changes nothing by itself (the hook refetches the detail)", () => {
    const s = started();
    expect(chatReducer(s, { type: "event", event: { type: "resync", seq: 0, ts: 1 } })).toBe(s);
  });

  it("catch_up_done moves the cursor forward only", () => {
    const s = started();
    expect(chatReducer(s, { type: "event", event: { type: "catch_up_done", seq: 40, ts: 1 } }).seq).toBe(40);
    expect(chatReducer(s, { type: "event", event: { type: "catch_up_done", seq: 2, ts: 1 } })).toBe(s);
  });

  it("a snapshot with a live last message resumes it as the live row", () => {
    const s = fromDetail(
      detail({
        running: true,
        run_id: "r7",
        messages: [
          { role: "user", content: "q", ts: 1, cid: "u" },
          { role: "assistant", content: "", ts: 2, run_id: "r7", live: true, blocks: [{ type: "text", item_id: "t", content: "par" }] },
        ],
      }),
    );
    expect(s.messages).toHaveLength(1);
    expect(s.live?.blocks).toEqual([{ type: "text", item_id: "t", content: "par" }]);
    expect(rowsOf(s).map((r) => r.key)).toEqual(["cid:u", "run:r7"]);
  });

  it("a snapshot's live row without a run_id takes the detail's, and done promotes it", () => {
    seq = 20;
    let s = fromDetail(
      detail({ running: true, run_id: "r9", seq: 20, messages: [{ role: "assistant", content: "", ts: 2, live: true, blocks: [] }] }),
    );
    expect(rowsOf(s).map((r) => r.key)).toEqual(["run:r9"]);
    s = fold(s, ev({ type: "done", run_id: "r9", status: "completed" }));
    expect(s.live).toBeNull();
    expect(rowsOf(s).map((r) => r.key)).toEqual(["run:r9"]);
  });

  it("a snapshot keeps unconfirmed sends and already-loaded older pages", () => {
    let s = fromDetail(detail({ offset: 20, total: 22, has_more: true, messages: [{ role: "user", content: "m20", ts: 1 }, { role: "assistant", content: "m21", ts: 2 }] }));
    s = chatReducer(s, { type: "older", page: detail({ offset: 0, has_more: false, messages: Array.from({ length: 20 }, (_, i) => ({ role: "user" as const, content: `m${i}`, ts: i })) }) });
    expect(s.offset).toBe(0);
    expect(s.messages).toHaveLength(22);
    s = chatReducer(s, { type: "send_local", cid: "new", content: "hi", ts: 3 });
    s = chatReducer(s, { type: "snapshot", detail: detail({ offset: 20, total: 22, has_more: true, seq: 12, messages: [{ role: "user", content: "m20", ts: 1 }, { role: "assistant", content: "m21", ts: 2 }] }) });
    expect(s.offset).toBe(0);
    expect(s.messages.map((m) => m.content).slice(-3)).toEqual(["m20", "m21", "hi"]);
  });
});

describe("sends", () => {
  it("a send while idle shows a pending row; 'started' confirms it and opens the live row", () => {
    let s = fromDetail(detail());
    s = chatReducer(s, { type: "send_local", cid: "m1", content: "hi", ts: 1 });
    s = chatReducer(s, { type: "send_result", cid: "m1", result: { status: "started", run_id: "r1", messages: [{ role: "user", content: "hi", ts: 2, cid: "m1" }] } });
    expect(s.messages).toEqual([{ role: "user", content: "hi", ts: 2, cid: "m1" }]);
    expect(s.running).toBe(true);
    expect(s.live?.run_id).toBe("r1");
  });

  it("'started' arriving after the stream already finished that run does not reopen it", () => {
    let s = fromDetail(detail());
    s = chatReducer(s, { type: "send_local", cid: "m1", content: "hi", ts: 1 });
    seq = 10;
    s = fold(s, ev({ type: "run_started", run_id: "r1" }), ev({ type: "done", run_id: "r1", status: "completed" }));
    s = chatReducer(s, { type: "send_result", cid: "m1", result: { status: "started", run_id: "r1", messages: [] } });
    expect(s.running).toBe(false);
    expect(s.live).toBeNull();
  });

  it("a send while running goes to the tray, and 'queued' hands it to the server's queue", () => {
    let s = started();
    s = chatReducer(s, { type: "send_local", cid: "m2", content: "later", ts: 1 });
    expect(queueOf(s)).toEqual([{ role: "user", cid: "m2", content: "later", ts: 1, confirmed: false }]);
    expect(rowsOf(s).some((r) => r.message.cid === "m2")).toBe(false);
    s = chatReducer(s, { type: "send_result", cid: "m2", result: { status: "queued", position: 1, message: { role: "user", ts: 1, cid: "m2", content: "later" }, pending_messages: [{ role: "user", ts: 1, cid: "m2", content: "later" }] } });
    expect(queueOf(s)).toEqual([{ role: "user", ts: 1, cid: "m2", content: "later", confirmed: true }]);
  });

  it("rows Stop cleared stay gone even if a racing snapshot or queue event still lists them", () => {
    let s = fold(started(), ev({ type: "queue_changed", pending: [{ role: "user", ts: 1, cid: "q1", content: "a" }] }));
    s = chatReducer(s, { type: "send_local", cid: "q2", content: "b", ts: 1 });
    s = chatReducer(s, { type: "queue_cleared" });
    expect(queueOf(s)).toEqual([]);
    s = chatReducer(s, { type: "snapshot", detail: detail({ running: true, run_id: "r1", seq: 30, pending_messages: [{ role: "user", ts: 1, cid: "q1", content: "a" }, { role: "user", ts: 1, cid: "q3", content: "c" }] }) });
    expect(queueOf(s).map((p) => p.cid)).toEqual(["q3"]);
    s = fold(s, { type: "queue_changed", seq: 31, pending: [{ role: "user", ts: 1, cid: "q2", content: "b" }] });
    expect(queueOf(s)).toEqual([]);
  });

  it("a failed send removes its row (the composer gets the text back)", () => {
    let s = chatReducer(fromDetail(detail()), { type: "send_local", cid: "m1", content: "hi", ts: 1 });
    s = chatReducer(s, { type: "send_failed", cid: "m1" });
    expect(s.messages).toEqual([]);
  });

  it("an optimistic answer closes the card; withdrawing it reopens", () => {
    let s = fold(started(), ev({ type: "question", question_id: "q", kind: "question", questions: [] }));
    s = chatReducer(s, { type: "answer_local", questionId: "q", answers: { a: "b" } });
    expect(s.pendingQuestionId).toBeNull();
    s = chatReducer(s, { type: "answer_local", questionId: "q", answers: null });
    expect(s.pendingQuestionId).toBe("q");
  });

  it("toDetail round-trips through fromDetail", () => {
    const s = fold(started(), ev({ type: "text", item_id: "t", content: "x" }));
    const back = fromDetail(toDetail(s));
    expect(rowsOf(back).map((r) => r.key)).toEqual(rowsOf(s).map((r) => r.key));
    expect(back.seq).toBe(s.seq);
    expect(emptyChat("z").seq).toBe(0);
  });
});

describe("steering", () => {
  const steer = (cid: string, content: string, sealed = true, ts = 50) =>
    ev({ type: "steered_into_turn", run_id: "r1", sealed, message: { role: "user", content, ts, cid } });
  const texts = (s: ChatState) => rowsOf(s).map((r) => (r.message.role === "user" ? `user:${r.message.content}` : `${r.live ? "live" : "assistant"}:${r.message.content}`));

  function working(): ChatState {
    seq = 10;
    return fold(
      fromDetail(detail()),
      ev({ type: "user_message", message: { role: "user", content: "go", ts: 1, cid: "a" } }),
      ev({ type: "run_started", run_id: "r1" }),
      ev({ type: "text", item_id: "t1", content: "Part one." }),
      ev({ type: "tool_start", tool_use_id: "u1", tool: "Bash", input: "sleep" }),
    );
  }

  it("seals the reply so far, adds the owner's row and goes on in a new live row of the same run", () => {
    const before = working();
    const liveKey = rowsOf(before).at(-1)?.key;
    let s = fold(before, steer("s1", "also this"));
    expect(s.running).toBe(true);
    expect(s.runId).toBe("r1");
    expect(s.live).toMatchObject({ run_id: "r1", blocks: [], live: true });
    expect(s.messages.at(-2)).toMatchObject({ role: "assistant", run_id: "r1", content: "Part one." });
    expect(s.messages.at(-2)?.live).toBeUndefined();
    expect((s.messages.at(-2)?.blocks?.[1] as ToolBlock).status).toBe("done");
    expect(s.messages.at(-1)).toEqual({ role: "user", content: "also this", ts: 50, cid: "s1" });
    const keys = rowsOf(s).map((r) => r.key);
    expect(keys).toEqual(["cid:a", "run:r1", "cid:s1", "run:r1:1"]);
    // The sealed part keeps the live row's key, so its DOM stays.
    expect(keys[1]).toBe(liveKey);
    s = fold(s, ev({ type: "text", item_id: "t2", content: "Part two." }));
    const continuedKey = rowsOf(s).at(-1)?.key;
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed" }));
    // done finishes the new part in place and leaves the sealed part alone.
    expect(texts(s)).toEqual(["user:go", "assistant:Part one.", "user:also this", "assistant:Part two."]);
    expect(rowsOf(s).at(-1)?.key).toBe(continuedKey);
    expect(s.total).toBe(4);
  });

  it("does not seal when the server did not (sealed:false) or when the part is blank", () => {
    seq = 10;
    const empty = fold(fromDetail(detail()), ev({ type: "run_started", run_id: "r1" }), steer("s1", "now"));
    expect(texts(empty)).toEqual(["user:now", "live:"]);
    seq = 10;
    const blank = fold(fromDetail(detail()), ev({ type: "run_started", run_id: "r1" }), ev({ type: "text", item_id: "t", content: " \n" }), steer("s1", "now", true));
    // The server stored the blank part (the transcript keeps its index) but it shows nothing.
    expect(blank.messages).toHaveLength(2);
    expect(texts(blank)).toEqual(["user:now", "live:"]);
    const notSealed = fold(working(), steer("s1", "now", false));
    expect(texts(notSealed)).toEqual(["user:go", "user:now", "live:"]);
  });

  it("shows an optimistic steer after the live row, confirms it on 'steered', and places it once", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "also this", ts: 40 });
    expect(rowsOf(s).at(-1)).toMatchObject({ key: "cid:s1", live: false, message: { sending: true, content: "also this" } });
    expect(rowsOf(s).at(-2)?.live).toBe(true);
    expect(queueOf(s)).toEqual([]);
    s = chatReducer(s, { type: "send_result", cid: "s1", result: { status: "steered", message: { role: "user", content: "also this", ts: 50, cid: "s1" } } });
    expect(rowsOf(s).at(-1)?.message.sending).toBe(false);
    s = fold(s, steer("s1", "also this"));
    expect(s.steering).toEqual([]);
    expect(texts(s)).toEqual(["user:go", "assistant:Part one.", "user:also this", "live:"]);
    expect(rowsOf(s).filter((r) => r.message.cid === "s1")).toHaveLength(1);
  });

  it("the stream may announce the steer before the POST answers: still one row", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "also this", ts: 40 });
    s = fold(s, steer("s1", "also this"));
    s = chatReducer(s, { type: "send_result", cid: "s1", result: { status: "steered", message: { role: "user", content: "also this", ts: 50, cid: "s1" } } });
    expect(texts(s)).toEqual(["user:go", "assistant:Part one.", "user:also this", "live:"]);
    expect(s.messages.at(-1)?.sending).toBeUndefined();
  });

  it("a steer the CLI could not take moves into the tray; a failed one disappears", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "later", ts: 40 });
    s = chatReducer(s, { type: "send_result", cid: "s1", result: { status: "queued", position: 1, message: { role: "user", ts: 1, cid: "s1", content: "later" }, pending_messages: [{ role: "user", ts: 1, cid: "s1", content: "later" }] } });
    expect(s.steering).toEqual([]);
    expect(queueOf(s)).toEqual([{ role: "user", ts: 1, cid: "s1", content: "later", confirmed: true }]);
    s = chatReducer(s, { type: "steer_local", cid: "s2", content: "oops", ts: 41 });
    s = chatReducer(s, { type: "send_failed", cid: "s2" });
    expect(rowsOf(s).some((r) => r.message.cid === "s2")).toBe(false);
  });

  it("a queued row that was steered leaves the tray", () => {
    let s = fold(working(), ev({ type: "queue_changed", pending: [{ role: "user", ts: 1, cid: "q1", content: "queued" }] }));
    expect(queueOf(s)).toHaveLength(1);
    s = fold(s, steer("q1", "queued"));
    expect(queueOf(s)).toEqual([]);
    expect(texts(s).slice(-2)).toEqual(["user:queued", "live:"]);
  });

  it("a steer whose turn ended first starts its own turn ('started'): one row, no stray steering", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "next", ts: 40 });
    s = fold(s, ev({ type: "done", run_id: "r1", status: "completed" }));
    s = chatReducer(s, { type: "send_result", cid: "s1", result: { status: "started", run_id: "r2", messages: [{ role: "user", content: "next", ts: 60, cid: "s1" }] } });
    expect(s.steering).toEqual([]);
    expect(texts(s)).toEqual(["user:go", "assistant:Part one.", "user:next", "live:"]);
    expect(s.live?.run_id).toBe("r2");
  });

  it("replaying the log twice (reconnect with Last-Event-ID) yields the same state", () => {
    seq = 10;
    const log = [
      ev({ type: "user_message", message: { role: "user", content: "go", ts: 1, cid: "a" } }),
      ev({ type: "run_started", run_id: "r1" }),
      ev({ type: "text", item_id: "t1", content: "Part one." }),
      steer("s1", "also this"),
      ev({ type: "text", item_id: "t2", content: "Part two." }),
      ev({ type: "done", run_id: "r1", status: "completed" }),
    ];
    const once = fold(fromDetail(detail()), ...log);
    expect(fold(once, ...log)).toBe(once);
    const midway = fold(fromDetail(detail()), ...log.slice(0, 4));
    expect(fold(midway, ...log.slice(0, 4))).toBe(midway);
    expect(texts(fold(midway, ...log))).toEqual(texts(once));
    expect(texts(once)).toEqual(["user:go", "assistant:Part one.", "user:also this", "assistant:Part two."]);
  });

  it("a resync snapshot taken after the steer, then the replayed log, adds nothing twice", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "also this", ts: 40 });
    const steered = steer("s1", "also this");
    const after = fold(s, steered);
    // What GET /api/chats/{id} answers after the steer: sealed part, owner's row, the live stub.
    const snapshot = detail({
      running: true,
      run_id: "r1",
      seq: (steered as { seq: number }).seq,
      total: 3,
      messages: [
        { role: "user", content: "go", ts: 1, cid: "a" },
        { role: "assistant", content: "Part one.", ts: 2, run_id: "r1", blocks: [{ type: "text", item_id: "t1", content: "Part one." }] },
        { role: "user", content: "also this", ts: 50, cid: "s1" },
        { role: "assistant", content: "", ts: 50, live: true, blocks: [] },
      ],
    });
    s = chatReducer(s, { type: "snapshot", detail: snapshot });
    expect(s.steering).toEqual([]);
    expect(rowsOf(s).map((r) => r.key)).toEqual(rowsOf(after).map((r) => r.key));
    const replayed = fold(s, steered);
    expect(replayed).toBe(s);
    const twice = chatReducer(chatReducer(s, { type: "snapshot", detail: snapshot }), { type: "event", event: steered });
    expect(rowsOf(twice).map((r) => r.key)).toEqual(["cid:a", "run:r1", "cid:s1", "run:r1:1"]);
  });

  it("a snapshot older than the steer keeps the optimistic row until the event arrives", () => {
    let s = chatReducer(working(), { type: "steer_local", cid: "s1", content: "also this", ts: 40 });
    s = chatReducer(s, { type: "snapshot", detail: toDetail(s) });
    expect(rowsOf(s).at(-1)?.key).toBe("cid:s1");
    expect(toDetail(s).messages.some((m) => m.cid === "s1")).toBe(false);
  });
});
