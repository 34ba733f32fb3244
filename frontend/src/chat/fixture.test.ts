// The shared fixture of real turns (`tests/fixtures/chat-turns.jsonl`, recorded from the real
// Claude and Codex CLIs by backend/server/tests/agents/fixtures.rs): the reducer, folding each
// chat's journal from an empty chat, ends with exactly the transcript the server stored. The
// server's own fold is checked against the same file in backend/server/tests/api/fixture.rs.
import { describe, expect, it } from "vitest";
import recorded from "../../../tests/fixtures/chat-turns.jsonl?raw";
import type { JournalEntry, Message } from "../api/types";
import { chatReducer, emptyChat, toDetail } from "./reducer";

interface Recorded {
  events: JournalEntry[];
  transcript: Message[];
}

function chats(): Map<string, Recorded> {
  const out = new Map<string, Recorded>();
  for (const line of recorded.split("\n")) {
    if (line.trim() === "") continue;
    const row = JSON.parse(line) as { chat: string; event?: JournalEntry; transcript?: Message[] };
    const chat = out.get(row.chat) ?? { events: [], transcript: [] };
    if (row.event) chat.events.push(row.event);
    if (row.transcript) chat.transcript = row.transcript;
    out.set(row.chat, chat);
  }
  return out;
}

/** The server stores no row for a run that produced nothing; the PWA keeps one to say so. */
function stored(messages: Message[]): Message[] {
  return messages.filter((m) => m.role !== "assistant" || (m.blocks?.length ?? 0) > 0);
}

describe("the recorded turns of both CLIs", () => {
  const all = chats();

  it("cover both CLIs and every scenario", () => {
    expect([...all.keys()].sort()).toEqual([
      "question-claude",
      "question-codex",
      "steer-claude",
      "steer-codex",
      "stop-claude",
      "stop-codex",
      "tools-claude",
      "tools-codex",
    ]);
  });

  for (const [id, chat] of all) {
    it(`${id}: the reducer ends with the transcript the server stored`, () => {
      let state = emptyChat(id);
      for (const event of chat.events) state = chatReducer(state, { type: "event", event, now: 0 });
      expect(state.live).toBeNull();
      expect(stored(toDetail(state).messages)).toEqual(chat.transcript);
    });
  }
});
