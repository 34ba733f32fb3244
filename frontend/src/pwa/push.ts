//! What a push carries and where a tap on it leads, shared by the service worker and its tests.
//! Targets come from the server (`/shell/?chat=<id>[&question=<id>]`, `/shell/?app=<id>`, `/`);
//! anything else leads to `/`. The shell's own routes are `/chat/<id>` and `?app=<id>`.

import type { NotificationAction, NotificationKind, PushPayload } from "../api/protocol.gen";

export type { PushPayload };

/** Every kind a push may carry (a payload of another kind is not shown). */
const KINDS: readonly NotificationKind[] = ["turn_done", "turn_failed", "question", "agent", "app", "schedule", "test"];

/** Buttons a notification shows. */
export const MAX_ACTIONS = 2;
const ID = /^[A-Za-z0-9_-]{1,128}$/;
const INTENT = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Parses a push's JSON text (the server's `protocol::PushPayload`); `null` when it is not a
 *  notification. */
export function parsePayload(text: string): PushPayload | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof raw !== "object" || raw === null) return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.title !== "string" || r.title === "" || typeof r.id !== "string") return null;
  const kind = KINDS.find((k) => k === r.kind);
  if (!kind) return null;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const actions = Array.isArray(r.actions)
    ? r.actions
        .filter((a: unknown): a is NotificationAction => {
          const o = a as Partial<Record<keyof NotificationAction, unknown>> | null;
          return typeof o === "object" && o !== null && typeof o.action === "string" && typeof o.title === "string";
        })
        .slice(0, MAX_ACTIONS)
    : [];
  const payload: PushPayload = {
    id: r.id,
    title: r.title,
    body: str(r.body),
    icon: str(r.icon),
    target: str(r.target),
    actions,
    kind,
    tag: str(r.tag),
  };
  const chat = str(r.chat_id);
  const question = str(r.question_id);
  const token = str(r.action_token);
  if (chat && question && token) {
    payload.chat_id = chat;
    payload.question_id = question;
    payload.action_token = token;
  }
  return payload;
}

/** The shell URL (same origin, path and query) a notification target opens; `/` for anything
 *  that is not a known deep link. */
export function shellUrlFor(target: string | null | undefined, origin: string): string {
  if (!target) return "/";
  let url: URL;
  try {
    url = new URL(target, origin);
  } catch {
    return "/";
  }
  if (url.origin !== origin) return "/";
  if (url.pathname === "/" && url.search === "") return "/";
  if (url.pathname !== "/shell/" && url.pathname !== "/shell") return "/";
  const chat = url.searchParams.get("chat");
  const app = url.searchParams.get("app");
  const question = url.searchParams.get("question");
  const intent = url.searchParams.get("intent");
  if (chat !== null && app === null && ID.test(chat)) {
    return question !== null && ID.test(question) ? `/chat/${chat}?question=${question}` : `/chat/${chat}`;
  }
  if (app !== null && chat === null && ID.test(app)) {
    return intent !== null && INTENT.test(intent) ? `/?app=${app}&intent=${intent}` : `/?app=${app}`;
  }
  return "/";
}

/** Whether the platform shows notification buttons (iOS does not: a tap opens the question). */
export function actionsSupported(maxActions: number | undefined): boolean {
  return typeof maxActions === "number" && maxActions > 0;
}

/** Pushed questions kept for the decision screen, at most. */
export const MAX_KEPT_DECISIONS = 20;

/** The cache key of a pushed question (same origin, never fetched). */
export function decisionKey(questionId: string): string {
  return `/__decisions/${encodeURIComponent(questionId)}`;
}
