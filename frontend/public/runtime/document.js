// `createUseDocument(React)` → `useDocument(path, options)`: one JSON document as React state,
// written with compare-and-swap. An update reads the document's current version, merges the app's
// change into it (three-way: what this frame last saw, what it wants, what the server has), writes
// it conditionally, and on a conflict (someone wrote in between) reads and merges again, up to
// `maxRetries` more times. See RUNTIME.md for the options and what the default merge does.

import { invalidArgument } from "./errors.js";

function isPlainObject(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON with object keys sorted, so equal documents serialise equally. */
export function stableStringify(value) {
  if (value === undefined) return "undefined";
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`).join(",")}}`;
}

const same = (a, b) => a === b || stableStringify(a) === stableStringify(b);

/** Identity of an array item: `clientKey`, else `key`, else `id`, else its content. */
export function defaultIdentity(item) {
  if (item && typeof item === "object") {
    if (item.clientKey != null) return String(item.clientKey);
    if (item.key != null) return String(item.key);
    if (item.id != null) return String(item.id);
  }
  return stableStringify(item);
}

/** Incoming array items keep the local `id` of the item with the same identity (so ids do not flip). */
export function reconcileIdentity(current, incoming, identity = defaultIdentity) {
  if (!Array.isArray(incoming) || !Array.isArray(current)) return incoming;
  const local = new Map();
  for (const item of current) local.set(identity(item), item);
  return incoming.map((item) => {
    const mine = local.get(identity(item));
    if (!mine || !item || typeof item !== "object" || typeof mine !== "object") return item;
    if (!Object.prototype.hasOwnProperty.call(mine, "id")) return item;
    return { ...item, id: mine.id };
  });
}

function byIdentity(list, identity) {
  const map = new Map();
  for (const item of list) {
    const key = identity(item);
    if (!map.has(key)) map.set(key, item);
  }
  return map;
}

function mergeArrays(base, mine, theirs, identity) {
  const b = byIdentity(base, identity);
  const m = byIdentity(mine, identity);
  const seen = new Set();
  const out = [];
  for (const item of theirs) {
    const key = identity(item);
    if (seen.has(key)) continue;
    seen.add(key);
    if (m.has(key)) out.push(mergeDocuments(b.get(key), m.get(key), item, identity));
    // Deleted here: gone, unless the server changed it meanwhile (an edit outweighs a delete).
    else if (b.has(key)) {
      if (!same(item, b.get(key))) out.push(item);
    } else out.push(item);
  }
  for (const item of mine) {
    const key = identity(item);
    if (seen.has(key)) continue;
    seen.add(key);
    // Deleted on the server: gone, unless this frame changed it.
    if (b.has(key)) {
      if (!same(item, b.get(key))) out.push(item);
    } else out.push(item);
  }
  return out;
}

function mergeObjects(base, mine, theirs, identity) {
  const b = isPlainObject(base) ? base : {};
  const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const out = {};
  for (const key of new Set([...Object.keys(theirs), ...Object.keys(mine)])) {
    const inBase = has(b, key);
    const inMine = has(mine, key);
    const inTheirs = has(theirs, key);
    if (inMine && inTheirs) out[key] = mergeDocuments(b[key], mine[key], theirs[key], identity);
    else if (inMine) {
      // Not on the server: added here (keep), or deleted there (keep only if changed here).
      if (!inBase || !same(mine[key], b[key])) out[key] = mine[key];
    } else if (!inBase || !same(theirs[key], b[key])) out[key] = theirs[key];
  }
  return out;
}

/**
 * The default merge: three-way. Whatever only one side changed is taken from that side; arrays
 * merge item by item (by `identity`), objects key by key; where both sides changed the same
 * scalar, this frame's value wins (it is written against the fresh version).
 */
export function mergeDocuments(base, mine, theirs, identity = defaultIdentity) {
  if (same(mine, base)) return theirs === undefined ? mine : theirs;
  if (theirs === undefined || same(theirs, base) || same(theirs, mine)) return mine;
  if (Array.isArray(mine) && Array.isArray(theirs)) return mergeArrays(Array.isArray(base) ? base : [], mine, theirs, identity);
  if (isPlainObject(mine) && isPlainObject(theirs)) return mergeObjects(base, mine, theirs, identity);
  return mine;
}

const HOOKS = ["useCallback", "useEffect", "useMemo", "useRef", "useState"];
/** A conflicted update waits about this long before its first retry, doubling each time (jittered). */
const RETRY_BASE_MS = 25;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const retryDelay = (attempt) => RETRY_BASE_MS * 2 ** attempt * (0.5 + Math.random());

/** The `useDocument` hook bound to `React` (the app's own) and `storage`. */
export function createUseDocument(storage, React) {
  /** @param {Record<string, any>} [options] */
  return function useDocument(path, options = {}) {
    const R = React || (typeof window !== "undefined" ? window.React : null);
    if (!R || HOOKS.some((name) => typeof R[name] !== "function")) {
      throw new Error("useDocument needs React: bind it with window.mobius.createUseDocument(React)");
    }
    const opts = options && typeof options === "object" ? options : {};
    const enabled = opts.enabled !== false && typeof path === "string" && path.length > 0;
    const hasInitial = Object.prototype.hasOwnProperty.call(opts, "initial");
    // The latest options, read when they are used: inline functions (merge, identity, onError)
    // must not restart the subscription or the refresh on every render.
    const latest = R.useRef(opts);
    latest.current = opts;
    // One controller per (path, enabled): late answers for an old path can never land in a new one.
    const controller = R.useMemo(() => {
      const raw = hasInitial ? opts.initial : null;
      const initial = typeof raw === "function" ? raw() : raw;
      return { path, enabled, initial, value: initial, base: null, version: null, loaded: false, chain: Promise.resolve(), writing: 0, queued: new Map() };
      // `initial` is read once per controller on purpose: only the path and `enabled` make a new one.
    }, [path, enabled]);
    const [state, setState] = R.useState(() => ({ controller, value: controller.value, status: enabled ? "loading" : "idle", lastError: null }));

    const publish = R.useCallback((owner, value, status, lastError = null) => {
      owner.value = value;
      setState((previous) => (previous.controller === owner ? { controller: owner, value, status, lastError } : previous));
    }, []);

    const fail = R.useCallback((owner, error, phase) => {
      setState((previous) => (previous.controller === owner ? { controller: owner, value: owner.value, status: "error", lastError: error } : previous));
      const onError = latest.current.onError;
      if (typeof onError === "function") {
        try {
          onError(error, { path: owner.path, phase });
        } catch {
          // A failing error handler must not hide the original error.
        }
      }
    }, []);

    const refresh = R.useCallback(async () => {
      const owner = controller;
      if (!owner.enabled) return owner.value;
      const identity = latest.current.identity || defaultIdentity;
      try {
        const loaded = await storage.getWithVersion(owner.path, "json");
        const next = loaded && loaded.value != null ? loaded.value : owner.initial;
        const value = reconcileIdentity(owner.value, next, identity);
        owner.base = value;
        owner.version = (loaded && loaded.version) || null;
        owner.loaded = true;
        publish(owner, value, "ready");
        return value;
      } catch (error) {
        fail(owner, error, "refresh");
        throw error;
      }
    }, [controller, publish, fail]);

    R.useEffect(() => {
      const owner = controller;
      let alive = true;
      const status = owner.enabled ? "loading" : "idle";
      setState((previous) =>
        previous.controller === owner && previous.status === status && previous.lastError == null ? previous : { controller: owner, value: owner.value, status, lastError: null },
      );
      if (!owner.enabled) return undefined;
      refresh().catch(() => undefined);
      const unsubscribe = storage.subscribe(owner.path, (next) => {
        // While this hook writes, the echo of its own write is not news (and must not become the
        // base a retry merges against).
        if (!alive || owner.writing > 0) return;
        const identity = latest.current.identity || defaultIdentity;
        const value = next == null ? owner.initial : reconcileIdentity(owner.value, next, identity);
        owner.base = value;
        publish(owner, value, "ready");
      });
      // A write that was queued offline met a newer version when it was sent: merge it again.
      const stopConflicts = storage._onQueuedConflict((conflict) => {
        const pending = conflict.path === owner.path ? owner.queued.get(conflict.writeId) : undefined;
        if (!alive || !pending) return;
        owner.queued.delete(conflict.writeId);
        enqueue(owner, () => commit(owner, pending.mine, pending.base)).catch(() => undefined);
      });
      return () => {
        alive = false;
        unsubscribe();
        stopConflicts();
      };
    }, [controller, refresh, publish]);

    /** Runs `task` after every earlier write of `owner`, in order. */
    const enqueue = (owner, task) => {
      const next = owner.chain.then(task, task);
      owner.chain = next.then(
        () => undefined,
        () => undefined,
      );
      return next;
    };

    /** Writes `mine`, merged with what the server has now, retrying on conflicts. */
    const commit = async (owner, mine, startBase) => {
      const o = latest.current;
      const identity = o.identity || defaultIdentity;
      const mode = o.mode || "cas";
      const maxRetries = Number.isInteger(o.maxRetries) && o.maxRetries >= 0 ? o.maxRetries : 3;
      owner.writing += 1;
      try {
        for (let attempt = 0; ; attempt++) {
          const base = attempt === 0 && startBase !== undefined ? startBase : owner.base;
          let theirs = base;
          let version = owner.version;
          try {
            // The first attempt writes against the version this hook last saw (a conditional
            // write that succeeds proves nobody wrote since, so there was nothing to merge); a
            // conflict, or an update before the first read finished, reads and merges.
            const optimistic = attempt === 0 && startBase === undefined && owner.loaded;
            if (mode === "cas" && !optimistic) {
              const loaded = await storage.getWithVersion(owner.path, "json");
              theirs = loaded && loaded.value != null ? loaded.value : owner.initial;
              version = (loaded && loaded.version) || null;
            } else if (mode === "lww") {
              try {
                theirs = (await storage.get(owner.path)) ?? owner.initial;
              } catch {
                // Unreadable: merge against what this frame last saw.
              }
            }
            const against = theirs == null ? owner.initial : theirs;
            const merge = typeof o.merge === "function" ? o.merge : (b, m, t) => mergeDocuments(b, m, t, identity);
            const out = reconcileIdentity(mine, merge(base, mine, against), identity);
            const conditions = mode === "cas" ? (version ? { ifMatch: version } : { ifNoneMatch: true }) : {};
            const result = await storage.durableWrite(owner.path, out, { kind: "json", ...conditions });
            const queued = result && result.durability === "queued";
            if (queued && mode === "cas" && result.writeId) owner.queued.set(result.writeId, { mine, base });
            owner.base = out;
            owner.version = (result && result.version) || version || null;
            owner.loaded = true;
            publish(owner, out, queued ? "saving" : "ready");
            return result;
          } catch (error) {
            if (error && error.code === "conflict" && mode === "cas" && attempt < maxRetries) {
              // Another writer won this round: let it finish its burst before reading again.
              await sleep(retryDelay(attempt));
              continue;
            }
            fail(owner, error, "update");
            throw error;
          }
        }
      } finally {
        owner.writing -= 1;
      }
    };

    const update = R.useCallback(
      (fn) => {
        const owner = controller;
        if (!owner.enabled) return Promise.reject(new Error("useDocument is idle; give it a document path before updating"));
        if (typeof fn !== "function") return Promise.reject(invalidArgument("useDocument: update(fn) needs a function"));
        return enqueue(owner, () => {
          // Called once: a retry merges again, it never calls the app's function again.
          const mine = fn(owner.value);
          publish(owner, mine, "saving");
          return commit(owner, mine, undefined);
        });
      },
      // enqueue and commit read only refs and their arguments.
      // (They are plain functions of this render; the hook's identity follows the controller.)
      [controller, publish, fail],
    );

    const set = R.useCallback((next) => update(() => next), [update]);

    // In the first render after a path change React state still belongs to the old path.
    const visible = state.controller === controller ? state : { value: controller.value, status: enabled ? "loading" : "idle", lastError: null };
    return { value: visible.value, status: visible.status, lastError: visible.lastError, update, set, refresh };
  };
}
