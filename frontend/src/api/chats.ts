//! Typed calls for chats, messages, the queue and stop, with the query keys they cache under.

import { apiFetch } from "./client";
import type { ApprovalAnswers, ChatDetail, ChatSummary, Message, PendingMessage, QuestionAnswers, RegenerateResult, SendResult } from "./types";
import type { AgentContext } from "./protocol.gen";

export const chatsKey = ["chats"] as const;
export const chatKey = (id: string) => ["chat", id] as const;

/** Messages per history page. */
export const PAGE_SIZE = 20;
/** A send waits this long before it is called ambiguous (then retried with the same cid). */
const SEND_TIMEOUT_MS = 45_000;

const enc = encodeURIComponent;

/** Chats per page of the drawer list. */
export const LIST_PAGE_SIZE = 50;

/** One page of the drawer list; `next_cursor` is null on the last page. */
export interface ChatListPage {
  chats: ChatSummary[];
  next_cursor: string | null;
}

/** A page of the drawer list after `cursor` (the top without). A server from before pages
 *  answers the whole list as an array: that is one last page. */
export async function listChatsPage(cursor: string | null, signal?: AbortSignal): Promise<ChatListPage> {
  const query = `limit=${LIST_PAGE_SIZE}${cursor === null ? "" : `&cursor=${enc(cursor)}`}`;
  const body = await apiFetch<ChatListPage | ChatSummary[]>(`/api/chats?${query}`, signal ? { signal } : {});
  return Array.isArray(body) ? { chats: body, next_cursor: null } : body;
}

/** One row of the drawer list (404 when the chat is deleted or not the owner's to see). */
export function fetchChatSummary(id: string, signal?: AbortSignal): Promise<ChatSummary> {
  return apiFetch<ChatSummary>(`/api/chats/${enc(id)}/summary`, signal ? { signal } : {});
}

export function createChat(body: { id: string; title?: string; messages?: Pick<Message, "role" | "content">[] }): Promise<ChatSummary> {
  return apiFetch<ChatSummary>("/api/chats", { method: "POST", body });
}

/** The newest page, or the page ending before `before`. */
export function fetchChat(id: string, options: { before?: number; signal?: AbortSignal } = {}): Promise<ChatDetail> {
  const query = `limit=${PAGE_SIZE}${options.before === undefined ? "" : `&before=${options.before}`}`;
  return apiFetch<ChatDetail>(`/api/chats/${enc(id)}?${query}`, options.signal ? { signal: options.signal } : {});
}

export interface ChatPatch {
  title?: string;
  pinned?: boolean;
  approval_policy?: "full" | "workspace" | "ask";
  provider?: "claude" | "codex";
  /** null goes back to the provider's default model. */
  model?: string | null;
  /** null goes back to the default effort. */
  effort?: string | null;
  /** Continue by itself after a usage limit. */
  auto_resume?: boolean;
  /** Every turn plans first (the owner approves the plan before the agent acts). */
  plan_mode?: boolean;
}

export function patchChat(id: string, patch: ChatPatch): Promise<{ ok: boolean }> {
  return apiFetch(`/api/chats/${enc(id)}`, { method: "PATCH", body: patch });
}

export function deleteChat(id: string): Promise<void> {
  return apiFetch(`/api/chats/${enc(id)}`, { method: "DELETE" });
}

export function recoverChat(id: string): Promise<{ ok: boolean }> {
  return apiFetch(`/api/chats/${enc(id)}/recover`, { method: "POST" });
}

/** `steer: true` while a turn runs asks the CLI to take the words into it (else they queue). */
/** A new version of the reply to the owner's last message (`message_idx`), given the versions on
 *  screen (a repeat of an accepted request comes back as a duplicate). */
export function regenerateReply(id: string, body: { message_idx?: number; versions?: number }): Promise<RegenerateResult> {
  return apiFetch<RegenerateResult>(`/api/chats/${enc(id)}/regenerate`, { method: "POST", body, timeoutMs: SEND_TIMEOUT_MS });
}

export function sendMessage(
  id: string,
  body: { content: string; cid: string; steer?: boolean; agent_context?: string; attachments?: string[] },
): Promise<SendResult> {
  const timezone = ownTimeZone();
  return apiFetch<SendResult>(`/api/chats/${enc(id)}/messages`, { method: "POST", body: timezone ? { ...body, timezone } : body, timeoutMs: SEND_TIMEOUT_MS });
}

/** This device's IANA time zone (`Europe/Paris`), sent with each message so the agent knows the
 *  owner's local date and time; null where the browser does not say. */
export function ownTimeZone(): string | null {
  try {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    return typeof zone === "string" && /^[A-Za-z0-9/_+-]{1,64}$/.test(zone) ? zone : null;
  } catch {
    return null;
  }
}

export function sendAnswers(
  id: string,
  body: { cid: string; question_id: string; answers: QuestionAnswers | ApprovalAnswers },
): Promise<SendResult> {
  return apiFetch<SendResult>(`/api/chats/${enc(id)}/messages`, { method: "POST", body, timeoutMs: SEND_TIMEOUT_MS });
}

export function editPending(id: string, cid: string, content: string): Promise<{ updated: boolean; pending_messages: PendingMessage[] }> {
  return apiFetch(`/api/chats/${enc(id)}/pending/${enc(cid)}`, { method: "PATCH", body: { content } });
}

export function removePending(id: string, cid: string): Promise<{ removed: boolean; pending_messages: PendingMessage[] }> {
  return apiFetch(`/api/chats/${enc(id)}/pending/${enc(cid)}`, { method: "DELETE" });
}

export function stopChat(chatId: string): Promise<{ stopped: boolean; cleared_pending_cids?: string[] }> {
  return apiFetch(`/api/chat/stop`, { method: "POST", body: { chat_id: chatId } });
}

export function fetchToolOutput(chatId: string, toolUseId: string): Promise<string> {
  return apiFetch<string>(`/api/chats/${enc(chatId)}/tool-output/${enc(toolUseId)}`, { responseType: "text", timeoutMs: 30_000 });
}

/** What a provider switch or a compaction answers. */
export interface HandoffResult {
  ok: boolean;
  switch_id: string;
  summary: string;
  /** False when the same switch was made before (this answers it again). */
  stored: boolean;
  provider: "claude" | "codex";
}

/** Moves the chat to `provider`, the conversation summarised to seed its new session. */
export function switchProvider(id: string, provider: "claude" | "codex", switchId: string): Promise<HandoffResult> {
  return apiFetch(`/api/chats/${enc(id)}/provider-switch`, { method: "POST", body: { provider, switch_id: switchId } });
}

/** `/compact`: the same provider, a fresh session from a summary. */
export function compactChat(id: string, switchId: string): Promise<HandoffResult> {
  return apiFetch(`/api/chats/${enc(id)}/compact`, { method: "POST", body: { switch_id: switchId } });
}

/** `DELETE /api/chats/{id}/goal`: unpins the chat's goal (every device hears `goal_changed`). */
export function dismissGoal(id: string): Promise<void> {
  return apiFetch(`/api/chats/${enc(id)}/goal`, { method: "DELETE" });
}

export const chatContextKey = (id: string) => ["chat-context", id] as const;

/** `GET /api/chats/{id}/context`: what the agent is given for the chat (owner only, masked). */
export function fetchChatContext(id: string, signal?: AbortSignal): Promise<AgentContext> {
  return apiFetch<AgentContext>(`/api/chats/${enc(id)}/context`, signal ? { signal } : {});
}
