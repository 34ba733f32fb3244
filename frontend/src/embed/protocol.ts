//! The chat-embed protocol as the nested chat frame speaks it (`moebius:chat-embed:*`, see
//! frontend/public/mobius-chat.js for the app's side): message shapes, checks and timing.

import { CHAT_EMBED } from "../apps/messages";

/** What the app sends to start (or re-authorize) the chat. */
export interface InitMessage {
  type: typeof CHAT_EMBED.init;
  instanceId: string;
  chatId: string;
  authorizationId: string;
  bootstrapCapability: string;
  picker: boolean;
  quickActions?: { label: string; prompt: string }[];
  guidance?: string;
}

/** The session the server hands out for a grant. */
export interface EmbedSession {
  token: string;
  chat_id: string;
  app_id: number;
  instance_id: string;
  role: string;
  operations: string[];
  expires_at: string;
}

const MIN_CAPABILITY_CHARS = 32;
/** The child warns this long before its session ends. */
export const EXPIRY_WARNING_MS = 2 * 60 * 1000;
const MIN_WARNING_DELAY_MS = 1000;
const UNKNOWN_EXPIRY_DELAY_MS = 10 * 60 * 1000;

/** The INIT message in `data`, if it is one. */
export function asInit(data: unknown): InitMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const m = data as Record<string, unknown>;
  if (m.type !== CHAT_EMBED.init) return null;
  const text = (v: unknown) => typeof v === "string" && v.length > 0;
  if (!text(m.instanceId) || !text(m.chatId) || !text(m.authorizationId)) return null;
  if (typeof m.bootstrapCapability !== "string" || m.bootstrapCapability.length < MIN_CAPABILITY_CHARS) return null;
  return {
    type: CHAT_EMBED.init,
    instanceId: m.instanceId as string,
    chatId: m.chatId as string,
    authorizationId: m.authorizationId as string,
    bootstrapCapability: m.bootstrapCapability,
    picker: m.picker !== false,
    ...(typeof m.guidance === "string" ? { guidance: m.guidance.slice(0, 300) } : {}),
    ...(Array.isArray(m.quickActions) ? { quickActions: m.quickActions.slice(0, 4) as NonNullable<InitMessage["quickActions"]> } : {}),
  };
}

/** Whether the server's answer is the session this INIT asked for. */
export function sessionMatches(session: unknown, init: InitMessage): session is EmbedSession {
  if (typeof session !== "object" || session === null) return false;
  const s = session as Record<string, unknown>;
  return (
    typeof s.token === "string" &&
    s.chat_id === init.chatId &&
    s.instance_id === init.instanceId &&
    s.role === "participant"
  );
}

/** Milliseconds until the child should ask for a new grant. */
export function warnIn(expiresAt: string | undefined, now: number): number {
  const end = expiresAt ? Date.parse(expiresAt) : Number.NaN;
  if (Number.isNaN(end)) return UNKNOWN_EXPIRY_DELAY_MS;
  return Math.max(MIN_WARNING_DELAY_MS, end - EXPIRY_WARNING_MS - now);
}

/** One `turn-done` per send: a `done` counts only after a send this frame made. */
export class TurnGate {
  private waiting = 0;

  sent(): void {
    this.waiting += 1;
  }

  /** True when a finished turn should be reported. */
  done(): boolean {
    if (this.waiting === 0) return false;
    this.waiting = 0;
    return true;
  }
}

const MAX_CONTEXT_KEYS = 32;
const MAX_CONTEXT_VALUE_CHARS = 4000;

/**
 * The `<app_state>` block the agent gets after a message: each non-empty entry of the app's
 * `getContext()` answer as `<key>value</key>` (keys reduced to `[A-Za-z0-9_.-]`, `<` escaped in
 * values), or `null` when there is nothing to say.
 */
export function appStateBlock(context: unknown): string | null {
  if (typeof context !== "object" || context === null || Array.isArray(context)) return null;
  const lines: string[] = [];
  for (const [rawKey, rawValue] of Object.entries(context).slice(0, MAX_CONTEXT_KEYS)) {
    const key = rawKey.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64);
    if (!key || rawValue === null || rawValue === undefined) continue;
    const text = typeof rawValue === "string" ? rawValue : JSON.stringify(rawValue);
    if (!text || !text.trim()) continue;
    lines.push(`<${key}>${text.slice(0, MAX_CONTEXT_VALUE_CHARS).replace(/</g, "&lt;")}</${key}>`);
  }
  return lines.length ? `<app_state>\n${lines.join("\n")}\n</app_state>` : null;
}
