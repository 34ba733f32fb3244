// The error classes apps see. Errors made in the shell cross the bridge as plain fields and are
// rebuilt here as instances of these classes (see bridge.js), so `instanceof` and `.code` both work.

import { registerErrorClass } from "./bridge.js";

/**
 * A write the server refused for good. `code`: `conflict` (412: the version moved; `retryable`),
 * `dead_letter` (any other refusal), `superseded` (a newer write to the path replaced it before it
 * was sent). Also `status`, `path`, `writeId` and `refusedValue` (null for a delete).
 */
export class DurableWriteError extends Error {
  /** @param {Record<string, any>} [fields] */
  constructor(message, fields = {}) {
    super(message);
    const f = fields && typeof fields === "object" ? fields : {};
    this.name = "DurableWriteError";
    this.code = f.code || "dead_letter";
    this.status = f.status;
    this.path = f.path;
    this.writeId = f.writeId;
    this.refusedValue = f.refusedValue;
    this.retryable = f.retryable === true;
  }
}

/** A storage call that failed for another reason: `code` (`invalid_path`, `timeout`, …) and `status`. */
export class StorageError extends Error {
  /** @param {Record<string, any>} [fields] */
  constructor(message, fields = {}) {
    super(message);
    const f = fields && typeof fields === "object" ? fields : {};
    this.name = "StorageError";
    this.code = f.code || "storage_error";
    this.status = f.status ?? 0;
  }
}

/** A capability session that could not start or ended badly: `code`, `capability`. */
export class CapabilityError extends Error {
  /** @param {Record<string, any>} [fields] */
  constructor(message, fields = {}) {
    super(message);
    const f = fields && typeof fields === "object" ? fields : {};
    this.name = typeof f.name === "string" && f.name ? f.name : "CapabilityError";
    this.code = f.code || "provider_error";
    this.capability = f.capability ?? null;
  }
}

/** A call made with arguments of the wrong type: a `TypeError` carrying `code: "invalid_argument"`. */
export function invalidArgument(message) {
  const error = /** @type {TypeError & {code?: string}} */ (new TypeError(message));
  error.code = "invalid_argument";
  return error;
}

registerErrorClass("DurableWriteError", DurableWriteError);
registerErrorClass("StorageError", StorageError);
