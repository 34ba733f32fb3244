// `window.mobius.capabilities`: browser capabilities the shell provides to apps that declare them
// in their manifest (`capabilities`, carried to the frame as `capabilityContract.runtime`). A
// session is opened with `moebius:capability-open` and answered with `capability-ready/-event/
// -result/-error`. A capability the shell does not provide answers `unavailable`, never silence.

import { hasParent, nextId, on, post, safeCall } from "./bridge.js";
import { CapabilityError } from "./errors.js";
import { FROM_FRAME, TO_FRAME } from "./messages.js";

/** A shell that says nothing at all about a session within this long has no provider for it. */
export const CAPABILITY_ANSWER_TIMEOUT_MS = 15_000;
const MAX_ACTION_CHARS = 80;

let declarations = {};
const sessions = new Map();

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) && [Object.prototype, null].includes(Object.getPrototypeOf(value));
}

/** Takes the declarations of the installed contract (`contract.runtime`). */
export function configureCapabilities(contract) {
  const runtime = contract && typeof contract === "object" && contract.runtime && typeof contract.runtime === "object" ? contract.runtime : {};
  const next = {};
  for (const [name, decl] of Object.entries(runtime)) if (decl && typeof decl === "object") next[name] = Object.freeze({ ...decl });
  declarations = next;
}

function capabilityError(code, capability, message, name) {
  return new CapabilityError(message, { code, capability, name });
}

function available(name, version) {
  const decl = typeof name === "string" ? declarations[name] : undefined;
  if (!decl) return false;
  if (version !== undefined && version !== decl.version) return false;
  return hasParent();
}

function describe(name) {
  const decl = typeof name === "string" ? declarations[name] : undefined;
  return decl ? { ...decl } : null;
}

function list() {
  return Object.keys(declarations).sort();
}

function open(name, input = {}) {
  const decl = typeof name === "string" ? declarations[name] : undefined;
  if (!decl) throw capabilityError("undeclared", name ?? null, `The capability ${JSON.stringify(name)} is not declared in this app's manifest.`);
  if (!hasParent()) throw capabilityError("unavailable", name, `${name} is only available inside Möbius.`, "NotSupportedError");
  if (!isPlainObject(input)) throw capabilityError("invalid_request", name, `${name}: the input must be a plain object.`, "TypeError");
  const requestId = nextId("cap").slice(0, 120);
  const listeners = new Map();
  let settled = false;
  let readySettled = false;
  let resolveReady;
  let rejectReady;
  let resolveResult;
  let rejectResult;
  const ready = new Promise((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  const result = new Promise((resolve, reject) => {
    resolveResult = resolve;
    rejectResult = reject;
  });
  // Nobody may be listening: a failure must never surface as an unhandled rejection.
  ready.catch(() => undefined);
  result.catch(() => undefined);
  const answered = () => clearTimeout(silence);
  const finishWith = (error, value) => {
    if (settled) return;
    settled = true;
    answered();
    sessions.delete(requestId);
    if (!readySettled) {
      readySettled = true;
      if (error) rejectReady(error);
      else resolveReady(undefined);
    }
    if (error) rejectResult(error);
    else resolveResult(value);
  };
  const session = {
    capability: name,
    ready,
    result,
    on(event, fn) {
      if (typeof event !== "string" || typeof fn !== "function") return () => undefined;
      let set = listeners.get(event);
      if (!set) {
        set = new Set();
        listeners.set(event, set);
      }
      set.add(fn);
      return () => set.delete(fn);
    },
    control(action, value) {
      if (!settled && typeof action === "string" && action) {
        post({ type: FROM_FRAME.capabilityControl, requestId, capability: name, action: action.slice(0, MAX_ACTION_CHARS), value });
      }
      return result;
    },
    finish() {
      return session.control("finish");
    },
    cancel() {
      if (settled) return;
      post({ type: FROM_FRAME.capabilityControl, requestId, capability: name, action: "cancel" });
      finishWith(capabilityError("aborted", name, `${name} was cancelled.`, "AbortError"));
    },
  };
  sessions.set(requestId, {
    capability: name,
    ready(value) {
      answered();
      if (readySettled) return;
      readySettled = true;
      resolveReady(value);
    },
    event(event, value) {
      answered();
      for (const fn of [...(listeners.get(event) ?? [])]) safeCall(fn, value);
    },
    result: (value) => finishWith(null, value),
    error: (msg) =>
      finishWith(capabilityError(typeof msg.code === "string" ? msg.code : "provider_error", name, typeof msg.message === "string" ? msg.message : `${name} failed.`, typeof msg.name === "string" ? msg.name : undefined)),
  });
  const silence = setTimeout(
    () => finishWith(capabilityError("unavailable", name, `Möbius did not answer the request for ${name}.`, "NotSupportedError")),
    CAPABILITY_ANSWER_TIMEOUT_MS,
  );
  if (!post({ type: FROM_FRAME.capabilityOpen, requestId, capability: name, version: decl.version, input })) {
    finishWith(capabilityError("unavailable", name, `${name} could not be requested from Möbius.`, "NotSupportedError"));
  }
  return session;
}

/** @param {{signal?: AbortSignal}} [options] */
function invoke(name, input, options = {}) {
  const session = open(name, input);
  const signal = options && typeof options === "object" ? options.signal : undefined;
  if (signal) {
    if (signal.aborted) session.cancel();
    else signal.addEventListener("abort", () => session.cancel(), { once: true });
  }
  return session.result;
}

function route(kind) {
  return (msg) => {
    const session = sessions.get(msg.requestId);
    // A reply about another capability than the session's is not for it.
    if (!session || msg.capability !== session.capability) return;
    if (kind === "ready") session.ready(msg.value);
    else if (kind === "event") session.event(msg.event, msg.value);
    else if (kind === "result") session.result(msg.value);
    else session.error(msg);
  };
}

on(TO_FRAME.capabilityReady, route("ready"));
on(TO_FRAME.capabilityEvent, route("event"));
on(TO_FRAME.capabilityResult, route("result"));
on(TO_FRAME.capabilityError, route("error"));

export const capabilities = { available, describe, list, open, invoke };
