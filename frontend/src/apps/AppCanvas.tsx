//! One running app: the sandboxed iframe and the broker between it and the server.
//!
//! The iframe has no `sandbox` attribute — the frame document's own CSP sandboxes it (opaque
//! origin), which lets the service worker answer that navigation offline. The broker sends
//! `frame-init` (the app token, never the owner's), answers the frame's module request with the
//! bytes it fetches (and the service worker caches), performs its storage calls, keeps its
//! virtual localStorage, maps in-app screens onto history entries, and passes the four host
//! requests up. Every message is checked to come from this exact iframe (see broker.ts).

import { useEffect, useRef, useState } from "react";
import type { AppSummary } from "../api/apps";
import { Icon } from "../components/Icon";
import { onlineStore, useOnline } from "../shell/online";
import { appNavDepth, pushAppNav } from "../shell/router";
import { themeStore } from "../shell/theme";
import { readFrameMessage, type FrameMessage } from "./broker";
import type { HostRequest } from "./host";
import { loadFrameLocal, recordFrameLocal } from "./frameLocal";
import { drainAllHosts, StorageRpcError, storageHostFor, type FrameSink } from "./storageHost";
import { ensureAppToken, heldToken } from "./tokens";
import { useAppToken } from "./useAppToken";

export interface AppCanvasProps {
  app: AppSummary;
  onHostRequest: (request: HostRequest) => void;
}

/** Bundles are self-contained ES modules; anything larger is refused. */
const MAX_MODULE_BYTES = 16 * 1024 * 1024;
/** The frame must say hello this soon after the canvas mounts. */
const HELLO_TIMEOUT_MS = 15_000;

type Phase = { kind: "loading" } | { kind: "mounted" } | { kind: "failed"; message: string };

/** The shell's colours, for the frame's `--mobius-*` variables and its colour scheme. */
export function frameTheme(): { scheme: "light" | "dark"; vars: Record<string, string> } {
  const choice = themeStore.get();
  const dark = choice === "dark" || (choice === "system" && typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches);
  const style = getComputedStyle(document.documentElement);
  const vars: Record<string, string> = {};
  for (const name of ["bg", "surface", "text", "muted", "border", "accent", "danger"]) {
    const value = style.getPropertyValue(`--${name}`).trim();
    if (value) vars[`--mobius-${name}`] = value;
  }
  return { scheme: dark ? "dark" : "light", vars };
}

type ModuleAnswer = { ok: true; bytes: ArrayBuffer } | { ok: false; error: { code: string; message: string; status: number } };

/** Fetches the app's bundle with its token (the service worker may answer from its cache). */
async function fetchModule(app: AppSummary): Promise<ModuleAnswer> {
  let held = await ensureAppToken(app.id).catch(() => heldToken(app.id));
  for (let attempt = 0; ; attempt++) {
    let response: Response;
    try {
      response = await fetch(app.module_url, { headers: held ? { Authorization: `Bearer ${held.token}` } : {}, credentials: "omit" });
    } catch {
      return { ok: false, error: { code: "network", message: "Couldn't download this app, and it isn't saved on this device yet.", status: 0 } };
    }
    if (response.status === 401 && attempt === 0) {
      held = await ensureAppToken(app.id, { force: true }).catch(() => null);
      if (held) continue;
    }
    if (!response.ok) {
      const code = response.status === 401 ? "token_expired" : response.status === 404 ? "not_found" : `http_${response.status}`;
      return { ok: false, error: { code, message: `Möbius answered ${response.status} for this app's code.`, status: response.status } };
    }
    const bytes = await response.arrayBuffer();
    if (bytes.byteLength > MAX_MODULE_BYTES) {
      return { ok: false, error: { code: "too_large", message: "This app's bundle is too large to run.", status: 413 } };
    }
    return { ok: true, bytes };
  }
}

export default function AppCanvas({ app, onHostRequest }: AppCanvasProps) {
  const frameRef = useRef<HTMLIFrameElement>(null);
  const [attempt, setAttempt] = useState(0);
  const [phase, setPhase] = useState<Phase>({ kind: "loading" });
  const token = useAppToken(app.id);
  const online = useOnline();

  // The latest values, for the message handler (registered once per frame).
  const latest = useRef({ app, onHostRequest, token, online });
  useEffect(() => {
    latest.current = { app, onHostRequest, token, online };
  });
  /** True once the frame is there to talk to (it said hello, or its document loaded). */
  const frameReady = useRef(false);
  /** True once the bootstrap itself spoke (a browser error page also "loads"). */
  const helloSeen = useRef(false);
  const inited = useRef(false);

  const post = (message: Record<string, unknown>, transfer: Transferable[] = []) => {
    // An opaque frame can only be addressed with "*"; nothing owner-level is ever sent.
    frameRef.current?.contentWindow?.postMessage(message, "*", transfer);
  };

  const sendInit = () => {
    const { token: t, online: isOnline } = latest.current;
    if (!frameReady.current || t.status === "pending") return;
    inited.current = true;
    post({
      type: "moebius:frame-init",
      token: t.held?.token ?? null,
      expiresAt: t.held?.expiresAt ?? 0,
      storage: loadFrameLocal(app.id),
      online: isOnline,
      theme: frameTheme(),
      capabilityContract: null,
    });
  };

  // A token that arrives (or changes) after the frame is ready is (re)sent; the frame treats
  // repeats as refreshes.
  const tokenKey = `${token.status}:${token.held?.token ?? ""}`;
  useEffect(() => {
    sendInit();
    // sendInit reads everything from refs; the token is the trigger.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tokenKey]);

  useEffect(() => {
    if (inited.current) post({ type: "moebius:online-status", online });
    if (online) drainAllHosts();
  }, [online]);

  // The shell's theme choice, or the system's scheme under "system", changed.
  useEffect(() => {
    const update = () => {
      if (inited.current) post({ type: "moebius:frame-theme", theme: frameTheme() });
    };
    const scheme = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
    scheme?.addEventListener("change", update);
    const stop = themeStore.subscribe(update);
    return () => {
      stop();
      scheme?.removeEventListener("change", update);
    };
  }, []);

  // The frame must say hello; a document that never loads (offline, never opened) fails here.
  useEffect(() => {
    if (phase.kind !== "loading") return;
    const timer = setTimeout(() => {
      if (!helloSeen.current) {
        setPhase({
          kind: "failed",
          message: onlineStore.get() ? "This app didn't start." : "You're offline and this app isn't saved on this device yet.",
        });
      }
    }, HELLO_TIMEOUT_MS);
    return () => clearTimeout(timer);
  }, [phase.kind, attempt]);

  // The broker.
  useEffect(() => {
    const host = storageHostFor(app.id, (force) => ensureAppToken(app.id, { force }).then((h) => h?.token ?? null));
    const sink: FrameSink = { post: (message) => post(message) };
    const navStack: string[] = [];
    const silent = new Set<string>();

    const handle = (message: FrameMessage) => {
      const current = latest.current;
      switch (message.type) {
        case "moebius:frame-hello":
          frameReady.current = true;
          helloSeen.current = true;
          sendInit();
          return;
        case "moebius:module-request":
          post({ type: "moebius:module-ack", requestId: message.requestId });
          void fetchModule(current.app).then((answer) => {
            if (answer.ok) post({ type: "moebius:module-result", requestId: message.requestId, ok: true, bytes: answer.bytes }, [answer.bytes]);
            else post({ type: "moebius:module-result", requestId: message.requestId, ok: false, error: answer.error });
          });
          return;
        case "moebius:token-expired":
          void current.token.refresh(true).finally(() => sendInit());
          return;
        case "moebius:frame-mounted":
          setPhase({ kind: "mounted" });
          return;
        case "moebius:frame-error":
          setPhase({ kind: "failed", message: message.error.message || "This app couldn't start." });
          return;
        case "moebius:storage-rpc":
          host.call(message.method, message.args, sink).then(
            (result) => post({ type: "moebius:storage-rpc-result", requestId: message.requestId, ok: true, result }),
            (error: unknown) => {
              const e = error instanceof StorageRpcError ? error : new StorageRpcError("storage_error", "The storage request failed.");
              post({ type: "moebius:storage-rpc-result", requestId: message.requestId, ok: false, error: { code: e.code, message: e.message, status: e.status } });
            },
          );
          return;
        case "moebius:storage-set":
        case "moebius:storage-remove":
        case "moebius:storage-clear":
          recordFrameLocal(current.app.id, message);
          return;
        case "moebius:new-chat":
          current.onHostRequest({ kind: "new-chat", title: message.title, draft: message.draft });
          return;
        case "moebius:open-chat":
          current.onHostRequest({ kind: "open-chat", chatId: message.chatId, draft: message.draft });
          return;
        case "moebius:open-app":
          current.onHostRequest({ kind: "open-app", appId: message.appId });
          return;
        case "moebius:open-settings":
          current.onHostRequest({ kind: "open-settings", section: message.section });
          return;
        case "moebius:nav-push":
          pushAppNav(message.requestId);
          navStack.push(message.requestId);
          return;
        case "moebius:nav-pop": {
          const top = navStack[navStack.length - 1];
          if (top === message.requestId && (history.state as { appNav?: string } | null)?.appNav === top) {
            silent.add(top);
            history.back();
          } else {
            const index = navStack.indexOf(message.requestId);
            if (index >= 0) navStack.splice(index, 1);
          }
          return;
        }
        case "moebius:app-error":
          if (message.report) current.onHostRequest({ kind: "report", message: message.message });
          else console.warn(`[${current.app.name}] ${message.message}`);
          return;
        case "moebius:signal":
          return;
      }
    };

    const onMessage = (event: MessageEvent) => {
      const message = readFrameMessage(event, frameRef.current?.contentWindow, location.origin);
      if (message) handle(message);
    };
    // Back from an in-app screen: tell the frame which screens closed.
    const onPop = () => {
      const depth = appNavDepth();
      while (navStack.length > depth) {
        const id = navStack.pop();
        if (id === undefined) break;
        if (silent.delete(id)) continue;
        post({ type: "moebius:nav-back", requestId: id });
      }
    };
    window.addEventListener("message", onMessage);
    window.addEventListener("popstate", onPop);
    return () => {
      window.removeEventListener("message", onMessage);
      window.removeEventListener("popstate", onPop);
      host.detach(sink);
    };
    // One broker per app and frame instance.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [app.id, attempt]);

  const retry = () => {
    frameReady.current = false;
    helloSeen.current = false;
    inited.current = false;
    setPhase({ kind: "loading" });
    if (token.status === "failed") void token.refresh(true);
    setAttempt((n) => n + 1);
  };

  const tokenFailed = token.status === "failed" && token.held === null;
  const failure = phase.kind === "failed" ? phase.message : tokenFailed ? "Couldn't get this app ready to run." : null;

  return (
    <div className="app-canvas" data-phase={failure ? "failed" : phase.kind}>
      {!tokenFailed && (
        <iframe
          key={attempt}
          ref={frameRef}
          className="app-frame"
          src={app.frame_url}
          title={app.name}
          allow="fullscreen"
          onLoad={() => {
            frameReady.current = true;
            sendInit();
          }}
        />
      )}
      {failure !== null ? (
        <div className="app-overlay app-overlay-failed" role="alert">
          <Icon name="alert" size={28} />
          <p className="app-overlay-title">{failure}</p>
          <div className="app-overlay-actions">
            <button type="button" className="btn btn-primary" onClick={retry}>
              Try again
            </button>
            <button type="button" className="btn btn-secondary" onClick={() => onHostRequest({ kind: "report", message: failure })}>
              Report to agent
            </button>
          </div>
        </div>
      ) : (
        phase.kind === "loading" && (
          <div className="app-overlay" role="status" aria-label={`Opening ${app.name}`}>
            <img className="app-overlay-icon" src={app.icon_url} alt="" width={56} height={56} />
            <p className="app-overlay-title">{app.name}</p>
            <span className="skeleton app-overlay-bar" />
          </div>
        )
      )}
    </div>
  );
}
