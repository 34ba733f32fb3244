// The window.mobius API inside a sandboxed mini-app frame. The frame is an opaque origin, so
// every storage call goes to the parent shell over postMessage; the shell performs it with the
// app's own token (the owner's token never enters the frame).
let seq = 0;
const pending = new Map();
const listeners = new Map();
const onlineListeners = new Set();

function parentCall(method, args) {
  const requestId = `rpc-${++seq}`;
  return new Promise((resolve, reject) => {
    pending.set(requestId, { resolve, reject });
    window.parent.postMessage({ type: "moebius:storage-rpc", requestId, method, args }, "*");
  });
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const msg = event.data || {};
  if (msg.type === "moebius:storage-rpc-result") {
    const entry = pending.get(msg.requestId);
    if (!entry) return;
    pending.delete(msg.requestId);
    if (msg.ok) entry.resolve(msg.result);
    else {
      const error = new Error((msg.error && msg.error.message) || "storage request failed");
      error.code = msg.error && msg.error.code;
      error.status = msg.error && msg.error.status;
      entry.reject(error);
    }
  } else if (msg.type === "moebius:storage-change") {
    const set = listeners.get(msg.path);
    if (set) for (const cb of set) cb(msg.value);
  } else if (msg.type === "moebius:online-status") {
    mobius.online = !!msg.online;
    for (const cb of onlineListeners) cb(mobius.online);
  }
});

class DurableWriteError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

const storage = {
  get: (path) => parentCall("get", [path]),
  set: (path, value) => parentCall("set", [path, value]),
  getText: (path) => parentCall("getText", [path]),
  setText: (path, text) => parentCall("setText", [path, text]),
  getBlob: (path) => parentCall("getBlob", [path]),
  setBlob: (path, blob) => parentCall("setBlob", [path, blob]),
  remove: (path) => parentCall("remove", [path]),
  list: (prefix = "", options = {}) => parentCall("list", [prefix, options]),
  getWithVersion: (path) => parentCall("getWithVersion", [path]),
  async durableWrite(path, data, options = {}) {
    try {
      return await parentCall("durableWrite", [path, data, options]);
    } catch (e) {
      if (e.status === 412) throw new DurableWriteError("The document changed since it was read.", "conflict");
      throw e;
    }
  },
  pendingCount: () => parentCall("pendingCount", []),
  subscribe(path, callback) {
    if (!listeners.has(path)) listeners.set(path, new Set());
    listeners.get(path).add(callback);
    parentCall("subscribe", [path]).catch(() => {});
    return () => {
      const set = listeners.get(path);
      if (set) set.delete(callback);
    };
  },
};
storage.subscribeText = storage.subscribe;
storage.subscribeBlob = storage.subscribe;

const mobius = {
  appId: null,
  online: typeof navigator === "undefined" ? true : navigator.onLine,
  onOnlineChange(cb) {
    onlineListeners.add(cb);
    return () => onlineListeners.delete(cb);
  },
  storage,
  DurableWriteError,
  signal(name, payload) {
    window.parent.postMessage({ type: "moebius:signal", name, payload }, "*");
  },
  nav: {
    open(label) {
      window.parent.postMessage({ type: "moebius:nav-push", requestId: `nav-${++seq}`, label }, "*");
      return { close() { window.parent.postMessage({ type: "moebius:nav-pop" }, "*"); } };
    },
  },
  chat: {
    start({ title, draft } = {}) {
      window.parent.postMessage({ type: "moebius:new-chat", title, draft }, "*");
    },
  },
  createUseDocument(React) {
    return function useDocument(path, initial) {
      const [value, setValue] = React.useState(initial);
      React.useEffect(() => {
        let live = true;
        storage.get(path).then((v) => live && v !== undefined && v !== null && setValue(v)).catch(() => {});
        const stop = storage.subscribe(path, (v) => live && setValue(v));
        return () => {
          live = false;
          stop();
        };
      }, [path]);
      const save = React.useCallback((next) => {
        setValue(next);
        return storage.set(path, next);
      }, [path]);
      return [value, save];
    };
  },
};

export function initMobiusRuntime(config = {}) {
  mobius.appId = config.appId ?? null;
  globalThis.mobius = mobius;
  return mobius;
}

export default mobius;
