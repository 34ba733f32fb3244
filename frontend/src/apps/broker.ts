//! What the shell accepts from an app frame. A message counts only when it comes from the exact
//! frame window this canvas mounted (`event.source`) — the payload's own `appId` is never
//! identity — and from an opaque origin (`"null"`) or this origin. Every field is checked and
//! bounded before anything acts on it.

import { intentName, type ManageAction } from "./host";
import { FROM_FRAME } from "./messages";

/** Messages a frame may send its parent. */
export type FrameMessage =
  | { type: typeof FROM_FRAME.frameHello }
  /** The runtime asks for the storage port (see `runtime/bridge.js`). */
  | { type: typeof FROM_FRAME.storagePortRequest }
  | { type: typeof FROM_FRAME.moduleRequest; requestId: string; retry: boolean }
  | { type: typeof FROM_FRAME.tokenExpired }
  | { type: typeof FROM_FRAME.frameMounted }
  | { type: typeof FROM_FRAME.frameError; error: { code: string; message: string } }
  | { type: typeof FROM_FRAME.storageRpc; requestId: string; method: string; args: unknown[] }
  | { type: typeof FROM_FRAME.storageSet; key: string; value: string }
  | { type: typeof FROM_FRAME.storageRemove; key: string }
  | { type: typeof FROM_FRAME.storageClear }
  | { type: typeof FROM_FRAME.newChat; title: string | null; draft: string }
  | { type: typeof FROM_FRAME.openChat; chatId: string; draft: string }
  /** `appId` is an id or a slug; `intent` a deep-link intent for it. */
  | { type: typeof FROM_FRAME.openApp; appId: number | string; intent: string | null }
  /** The frame applied deep-link intent `nonce` (the shell uncovers the app). */
  | { type: typeof FROM_FRAME.appIntentApplied; nonce: string }
  | { type: typeof FROM_FRAME.installApp; source: string }
  | { type: typeof FROM_FRAME.manageApp; action: ManageAction; appId: number }
  | { type: typeof FROM_FRAME.openSettings; section: string | null }
  | { type: typeof FROM_FRAME.navPush; requestId: string | null; label: string; reversible: boolean }
  | { type: typeof FROM_FRAME.navPop; requestId: string | null }
  | { type: typeof FROM_FRAME.navForwardAck | typeof FROM_FRAME.navForwardRejected; requestId: string }
  | { type: typeof FROM_FRAME.capabilityOpen; requestId: string; capability: string; version: unknown; input: unknown }
  | { type: typeof FROM_FRAME.capabilityControl; requestId: string; capability: string; action: string }
  | { type: typeof FROM_FRAME.immersive; value: boolean }
  | { type: typeof FROM_FRAME.appError; report: boolean; message: string };

/** The parts of a `MessageEvent` the check reads. */
export interface IncomingEvent {
  source: unknown;
  origin: string;
  data: unknown;
}

const MAX_ID = 200;
const MAX_DRAFT = 20_000;
/** An install source an app may hand the shell's review. */
const MAX_SOURCE = 2_048;
const MAX_KEY = 1_000;
/** One virtual localStorage value (the whole store is capped where it is kept). */
const MAX_VALUE = 512 * 1024;
const MAX_ERROR = 4_000;
const MAX_CAPABILITY_REQUEST_ID = 120;
const MAX_CAPABILITY_NAME = 160;
const MAX_CAPABILITY_ACTION = 80;
const CHAT_ID = /^[A-Za-z0-9_-]{1,80}$/;

function str(value: unknown, max: number): string | null {
  return typeof value === "string" && value.length <= max ? value : null;
}

/** An app named by id (a positive integer, or its digits) or by slug. */
function appRef(value: unknown): number | string | null {
  if (typeof value === "number") return Number.isSafeInteger(value) && value > 0 ? value : null;
  if (typeof value !== "string") return null;
  if (/^\d{1,15}$/.test(value)) return Number(value) > 0 ? Number(value) : null;
  return /^[A-Za-z0-9_-]{1,80}$/.test(value) ? value : null;
}

function id(value: unknown): string | null {
  const s = str(value, MAX_ID);
  return s !== null && s !== "" ? s : null;
}

function clip(value: unknown, max: number): string {
  return typeof value === "string" ? value.slice(0, max) : "";
}

/**
 * The message `event` carries, or null when it is not from `frame` (the mounted iframe's
 * window), not from an opaque or the shell's own origin, or not a well-formed frame message.
 */
export function readFrameMessage(event: IncomingEvent, frame: Window | null | undefined, shellOrigin: string): FrameMessage | null {
  if (!frame || event.source !== frame) return null;
  if (event.origin !== "null" && event.origin !== shellOrigin) return null;
  return parseFrameMessage(event.data);
}

/** `data` as a well-formed frame message, or null (the sender was checked by the caller). */
export function parseFrameMessage(data: unknown): FrameMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const m = data as Record<string, unknown>;
  switch (m.type) {
    case FROM_FRAME.frameHello:
    case FROM_FRAME.storagePortRequest:
    case FROM_FRAME.tokenExpired:
    case FROM_FRAME.frameMounted:
    case FROM_FRAME.storageClear:
      return { type: m.type };
    case FROM_FRAME.moduleRequest: {
      const requestId = id(m.requestId);
      return requestId ? { type: m.type, requestId, retry: m.retry === true } : null;
    }
    case FROM_FRAME.frameError: {
      const error = typeof m.error === "object" && m.error !== null ? (m.error as Record<string, unknown>) : {};
      return { type: m.type, error: { code: clip(error.code, 80) || "load_failed", message: clip(error.message, MAX_ERROR) } };
    }
    case FROM_FRAME.storageRpc: {
      const requestId = id(m.requestId);
      const method = str(m.method, 40);
      if (!requestId || typeof m.method !== "string") return null;
      // Answered even when malformed (an error, never a 60 s silence): the method or its
      // arguments are refused by the storage host.
      return { type: m.type, requestId, method: method ?? "", args: Array.isArray(m.args) ? (m.args as unknown[]) : [] };
    }
    case FROM_FRAME.storageSet: {
      const key = str(m.key, MAX_KEY);
      const value = str(m.value, MAX_VALUE);
      return key !== null && value !== null ? { type: m.type, key, value } : null;
    }
    case FROM_FRAME.storageRemove: {
      const key = str(m.key, MAX_KEY);
      return key !== null ? { type: m.type, key } : null;
    }
    case FROM_FRAME.newChat:
      return { type: m.type, title: str(m.title, 200) || null, draft: clip(m.draft, MAX_DRAFT) };
    case FROM_FRAME.openChat: {
      const chatId = str(m.chatId, 80);
      return chatId !== null && CHAT_ID.test(chatId) ? { type: m.type, chatId, draft: clip(m.draft, MAX_DRAFT) } : null;
    }
    case FROM_FRAME.openApp: {
      const appId = appRef(m.appId);
      return appId !== null ? { type: m.type, appId, intent: intentName(m.intent) } : null;
    }
    case FROM_FRAME.appIntentApplied: {
      const nonce = id(m.nonce);
      return nonce ? { type: m.type, nonce } : null;
    }
    case FROM_FRAME.manageApp: {
      const { appId, action } = m;
      const valid = typeof appId === "number" && Number.isSafeInteger(appId) && appId > 0 && (action === "update" || action === "uninstall");
      return valid ? { type: m.type, action, appId } : null;
    }
    case FROM_FRAME.installApp: {
      const source = str(m.source, MAX_SOURCE);
      return source !== null && source.trim() !== "" ? { type: m.type, source: source.trim() } : null;
    }
    case FROM_FRAME.openSettings:
      return { type: m.type, section: str(m.section, 80) || null };
    case FROM_FRAME.navPush:
      // An app that posts the message itself may leave the id out; it is still a screen.
      if (m.requestId !== undefined && m.requestId !== null && !id(m.requestId)) return null;
      return { type: m.type, requestId: id(m.requestId), label: clip(m.label, 200) || "app-detail", reversible: m.reversible === true };
    case FROM_FRAME.navPop:
      // Without an id: the app's own Back, for its top screen.
      if (m.requestId !== undefined && m.requestId !== null && !id(m.requestId)) return null;
      return { type: m.type, requestId: id(m.requestId) };
    case FROM_FRAME.navForwardAck:
    case FROM_FRAME.navForwardRejected: {
      const requestId = id(m.requestId);
      return requestId ? { type: m.type, requestId } : null;
    }
    case FROM_FRAME.capabilityOpen: {
      const requestId = str(m.requestId, MAX_CAPABILITY_REQUEST_ID);
      const capability = str(m.capability, MAX_CAPABILITY_NAME);
      if (!requestId || !capability) return null;
      return { type: m.type, requestId, capability, version: m.version, input: m.input };
    }
    case FROM_FRAME.capabilityControl: {
      const requestId = str(m.requestId, MAX_CAPABILITY_REQUEST_ID);
      const capability = str(m.capability, MAX_CAPABILITY_NAME);
      if (!requestId || !capability || typeof m.action !== "string") return null;
      return { type: m.type, requestId, capability, action: m.action.slice(0, MAX_CAPABILITY_ACTION) };
    }
    case FROM_FRAME.immersive:
      return typeof m.value === "boolean" ? { type: m.type, value: m.value } : null;
    case FROM_FRAME.appError: {
      const error = typeof m.error === "object" && m.error !== null ? (m.error as Record<string, unknown>) : {};
      return { type: m.type, report: m.report === true, message: clip(error.message, MAX_ERROR) };
    }
    default:
      return null;
  }
}

/** A frame's virtual localStorage as the shell keeps it: at most this many UTF-16 units. */
export const MAX_FRAME_LOCAL_CHARS = 2 * 1024 * 1024;

/** Applies one mirrored localStorage change; returns null when the result would be too big. */
export function applyLocalChange(
  current: Record<string, string>,
  change: Extract<FrameMessage, { type: typeof FROM_FRAME.storageSet | typeof FROM_FRAME.storageRemove | typeof FROM_FRAME.storageClear }>,
): Record<string, string> | null {
  if (change.type === FROM_FRAME.storageClear) return {};
  const next = { ...current };
  if (change.type === FROM_FRAME.storageRemove) delete next[change.key];
  else next[change.key] = change.value;
  let size = 0;
  for (const [key, value] of Object.entries(next)) size += key.length + value.length;
  return size > MAX_FRAME_LOCAL_CHARS ? null : next;
}
