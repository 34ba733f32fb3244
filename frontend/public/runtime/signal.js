// `window.mobius.signal(name, payload)`: fire-and-forget usage events. They are checked and cut to
// size here, buffered in memory, and every few seconds (and when the page hides) handed to the
// shell's durable queue (`queueSignals`), which delivers them to `/api/client-signal` when it can.

import { rpc } from "./bridge.js";

const MAX_NAME_CHARS = 80;
const MAX_PAYLOAD_ENTRIES = 20;
const MAX_KEY_CHARS = 80;
const MAX_STRING_CHARS = 500;
/** A serialised event (counted as the server counts: non-ASCII code units as 6 bytes) stays under this. */
const MAX_EVENT_BYTES = 4000;
const MAX_INSTANCE_CHARS = 64;
/** Events kept in memory while the shell cannot take them; the oldest go first. */
export const MAX_BUFFERED_SIGNALS = 500;
const FLUSH_DELAY_MS = 5_000;
const FLUSH_BATCH = 100;

const state = { buffer: [], timer: null, flushing: null, instanceId: null, listening: false };

function wireBytes(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) n += text.charCodeAt(i) < 0x80 ? 1 : 6;
  return n;
}

function uuid() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") {
    try {
      return c.randomUUID();
    } catch {
      // Not a secure context: fall through.
    }
  }
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === "function") c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The event for `signal(name, payload)`, or null when the name is unusable. */
export function buildSignal(name, payload, instanceId, now = new Date()) {
  if (typeof name !== "string") return null;
  const trimmed = name.trim();
  if (!trimmed) return null;
  const event = { id: uuid(), occurred_at: now.toISOString(), name: trimmed.slice(0, MAX_NAME_CHARS), payload: {} };
  if (typeof instanceId === "string" && instanceId) event.app_instance_id = instanceId.slice(0, MAX_INSTANCE_CHARS);
  const plain = payload && typeof payload === "object" && !Array.isArray(payload) && Object.getPrototypeOf(payload) === Object.prototype;
  if (!plain) return event;
  for (const [rawKey, raw] of Object.entries(payload).slice(0, MAX_PAYLOAD_ENTRIES)) {
    let value;
    if (typeof raw === "string") value = raw.slice(0, MAX_STRING_CHARS);
    else if (typeof raw === "boolean") value = raw;
    else if (typeof raw === "number" && Number.isFinite(raw)) value = raw;
    else continue;
    const key = rawKey.slice(0, MAX_KEY_CHARS);
    if (!key) continue;
    const candidate = { ...event.payload, [key]: value };
    if (wireBytes(JSON.stringify({ ...event, payload: candidate })) > MAX_EVENT_BYTES) continue;
    event.payload = candidate;
  }
  return event;
}

/** Moves the buffer into the shell's durable queue, 100 at a time; what it does not take stays. */
export function flushSignals() {
  if (state.timer !== null) clearTimeout(state.timer);
  state.timer = null;
  if (state.flushing) return state.flushing;
  state.flushing = (async () => {
    try {
      while (state.buffer.length > 0) {
        const batch = state.buffer.slice(0, FLUSH_BATCH);
        state.buffer = state.buffer.slice(batch.length);
        try {
          await rpc("queueSignals", [batch]);
        } catch {
          state.buffer = [...batch, ...state.buffer].slice(-MAX_BUFFERED_SIGNALS);
          return;
        }
      }
    } finally {
      state.flushing = null;
    }
  })();
  return state.flushing;
}

function listen() {
  if (state.listening || typeof window === "undefined") return;
  state.listening = true;
  window.addEventListener("pagehide", () => void flushSignals());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") void flushSignals();
  });
}

/** Sets the app instance the events are stamped with. */
export function configureSignals(instanceId) {
  state.instanceId = typeof instanceId === "string" && instanceId ? instanceId : null;
  listen();
}

/** `signal(name, payload)`: never throws, returns undefined. */
export function signal(name, payload) {
  try {
    const event = buildSignal(name, payload, state.instanceId);
    if (!event) return undefined;
    state.buffer.push(event);
    if (state.buffer.length > MAX_BUFFERED_SIGNALS) state.buffer = state.buffer.slice(-MAX_BUFFERED_SIGNALS);
    if (state.timer === null && !state.flushing) state.timer = setTimeout(() => void flushSignals(), FLUSH_DELAY_MS);
  } catch {
    // Telemetry never disturbs the app.
  }
  return undefined;
}

/** Events waiting in this frame's memory (not yet handed to the shell). */
export function bufferedSignalCount() {
  return state.buffer.length;
}
