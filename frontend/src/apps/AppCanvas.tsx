//! One running app: the sandboxed iframe and the broker between it and the server.
//!
//! The iframe carries the same `sandbox` flags as the frame document's CSP (opaque origin, no
//! escape for popups), so whatever the frame navigates to stays sandboxed. A sandboxed frame's
//! navigation bypasses the service worker; the server lets the browser's HTTP cache keep each
//! build's frame document, which is how an app opened once starts again offline. The broker sends
//! `frame-init` (the app token, never the owner's), answers the frame's module request with the
//! bytes it fetches (and the service worker caches), performs its storage calls (storage/host.ts),
//! keeps its virtual localStorage, maps in-app screens onto history entries (`nav-push` is
//! acknowledged or rejected; the system Back sends `nav-back`, Forward onto a screen the app can
//! restore sends `nav-forward`), answers capability requests, and passes the four host requests
//! up. Every message is checked to come from this exact iframe (see broker.ts).
//!
//! Immersive mode: the frame asks (`moebius:immersive`), the canvas decides and answers with
//! `moebius:immersive-state` (the shell is the source of truth), tells its host to hide the chrome
//! around it, and shows a small "Exit full screen" button; Escape and the system Back (immersive
//! is a history entry, like an in-app screen) leave it too. It resets with every new frame. The
//! frame also gets the safe-area insets its box overlaps (`moebius:frame-insets`, see insets.ts).
//!
//! Deep-link intents (`?app=<id>&intent=<name>`, or another app's `open-app`): once the frame
//! mounted, it gets `moebius:app-intent {intent, nonce}` and the app stays covered until the
//! frame's `app-intent-applied` for that nonce (at most `INTENT_COVER_MAX_MS`), so the owner never
//! sees the screen the intent replaces. The frame also hears whether it is on screen
//! (`moebius:frame-visibility {visible}`: once mounted and on every change of the page's visibility).

import { useEffect, useRef, useState } from "react";
import type { AppSummary } from "../api/apps";
import { Icon } from "../components/ui/Icon";
import { onlineStore, useOnline } from "../shell/online";
import { appNavDepth, pushAppNav, type AppIntent } from "../shell/router";
import { themeStore } from "../shell/theme";
import { customThemeStore } from "../shell/customTheme";
import { parseFrameMessage, readFrameMessage, type FrameMessage } from "./broker";
import { frameTheme } from "./frameTheme";
import type { HostRequest } from "./host";
import { loadFrameLocal, recordFrameLocal } from "./frameLocal";
import { measureFrameInsets } from "./insets";
import { FROM_FRAME, TO_FRAME, type ToFrameMessage } from "./messages";
import { telemetry } from "./telemetry";
import type { FrameSink } from "./storage/frames";
import { storageHostFor } from "./storage/host";
import { wireError } from "./storage/wire";
import { ensureAppToken, heldToken } from "./tokens";
import { useAppToken } from "./useAppToken";

export interface AppCanvasProps {
  app: AppSummary;
  onHostRequest: (request: HostRequest) => void;
  /** Immersive mode turned on or off (also off when the canvas goes away): hide the chrome. */
  onImmersiveChange?: (immersive: boolean) => void;
  /** The deep-link intent to hand the app (each nonce once per frame). */
  intent?: AppIntent | null;
}

/** The iframe's sandbox: exactly the flags of the frame document's CSP (`apps/serve.rs`, whose
 * test compares the two). No `allow-same-origin`, no `allow-popups-to-escape-sandbox`. */
export const FRAME_SANDBOX = "allow-scripts allow-forms allow-popups allow-top-navigation-by-user-activation allow-downloads";

/** Bundles are self-contained ES modules; anything larger is refused. */
const MAX_MODULE_BYTES = 16 * 1024 * 1024;
/** The frame must say hello this soon after the canvas mounts. */
const HELLO_TIMEOUT_MS = 15_000;
/** The longest the app stays covered while it applies a deep-link intent. */
const INTENT_COVER_MAX_MS = 1_500;

type Phase = { kind: "loading" } | { kind: "mounted" } | { kind: "failed"; message: string };

/** A history entry this canvas pushed: an in-app screen (`nav-push`) or immersive mode. */
interface NavEntry {
  id: string;
  immersive: boolean;
  /** Closed by the app or the shell: Back over its history entry is no news to the frame. */
  closed: boolean;
  /** The app can bring it back when the browser goes Forward onto it. */
  reversible: boolean;
}
/** The `appNav` id of immersive mode's history entry (entries are told apart by object). */
const IMMERSIVE_NAV_ID = "mobius:immersive";
/** In-app screens one app may stack above its own entry. */
export const MAX_NAV_ENTRIES = 20;
/** The app must answer `nav-forward` within this long, or the Forward is undone. */
const NAV_FORWARD_TIMEOUT_MS = 5_000;

/** Whether the app's manifest asks for `permissions.manage_apps` (installs, updates, uninstalls through the owner). */
const managesApps = (app: AppSummary) => (app.capability_contract?.data as { manage_apps?: boolean } | undefined)?.manage_apps === true;

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

export default function AppCanvas({ app, onHostRequest, onImmersiveChange, intent = null }: AppCanvasProps) {
  const frameRef = useRef<HTMLIFrameElement>(null);
  const [attempt, setAttempt] = useState(0);
  const [phase, setPhase] = useState<Phase>({ kind: "loading" });
  const [immersive, setImmersiveState] = useState(false);
  /** The app is applying a deep-link intent: it stays covered. */
  const [applyingIntent, setApplyingIntent] = useState(false);
  const token = useAppToken(app.id);
  const online = useOnline();
  /** No app token and none held: the frame is not rendered. */
  const tokenFailed = token.status === "failed" && token.held === null;

  // The latest values, for the message handler (registered once per frame).
  const latest = useRef({ app, onHostRequest, onImmersiveChange, token, online });
  useEffect(() => {
    latest.current = { app, onHostRequest, onImmersiveChange, token, online };
  });
  /** Turns immersive mode on or off as the shell (set by the broker of the current frame). */
  const setImmersive = useRef<(value: boolean) => void>(() => undefined);
  /** The insets last sent, so only changes are sent again. */
  const sentInsets = useRef("");
  /** True once the frame is there to talk to (it said hello, or its document loaded). */
  const frameReady = useRef(false);
  /** True once the bootstrap itself spoke (a browser error page also "loads"). */
  const helloSeen = useRef(false);
  const inited = useRef(false);
  /** The frame's app mounted (and can take an intent). */
  const mounted = useRef(false);
  const intentRef = useRef(intent);
  /** The nonce of the intent last posted, until the frame says it applied it. */
  const pendingIntent = useRef<string | null>(null);
  const intentTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const post = (message: ToFrameMessage, transfer: Transferable[] = []) => {
    // An opaque frame can only be addressed with "*"; nothing owner-level is ever sent.
    frameRef.current?.contentWindow?.postMessage(message, "*", transfer);
  };

  const sendInit = () => {
    const { token: t, online: isOnline } = latest.current;
    if (!frameReady.current || t.status === "pending") return;
    inited.current = true;
    post({
      type: TO_FRAME.frameInit,
      token: t.held?.token ?? null,
      expiresAt: t.held?.expiresAt ?? 0,
      storage: loadFrameLocal(app.id),
      online: isOnline,
      ...frameTheme(),
      capabilityContract: latest.current.app.capability_contract ?? null,
    });
    post({ type: TO_FRAME.onlineStatus, online: isOnline });
    sendInsets(true);
  };

  /** Hands the mounted app the current intent, covering it until the frame applied it. */
  const deliverIntent = () => {
    const current = intentRef.current;
    if (!mounted.current || current === null) return;
    const nonce = `${app.id}-${current.nonce}-${attempt}`;
    if (pendingIntent.current === nonce) return;
    pendingIntent.current = nonce;
    setApplyingIntent(true);
    clearTimeout(intentTimer.current);
    intentTimer.current = setTimeout(() => setApplyingIntent(false), INTENT_COVER_MAX_MS);
    post({ type: TO_FRAME.appIntent, intent: current.value, nonce });
  };

  const intentNonce = intent?.nonce ?? null;
  useEffect(() => {
    intentRef.current = intent;
    deliverIntent();
    // deliverIntent reads refs; a new intent (nonce) is the trigger.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intentNonce]);

  useEffect(() => () => clearTimeout(intentTimer.current), []);

  useEffect(() => {
    const update = () => {
      if (mounted.current) post({ type: TO_FRAME.frameVisibility, visible: document.visibilityState === "visible" });
    };
    document.addEventListener("visibilitychange", update);
    return () => document.removeEventListener("visibilitychange", update);
  }, []);

  /** Sends the frame the safe-area insets its box overlaps, when they changed (or `force`). */
  const sendInsets = (force = false) => {
    const frame = frameRef.current;
    if (!inited.current || !frame) return;
    const insets = measureFrameInsets(frame);
    const key = JSON.stringify(insets);
    if (!force && key === sentInsets.current) return;
    sentInsets.current = key;
    post({ type: TO_FRAME.frameInsets, insets });
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
    if (inited.current) post({ type: TO_FRAME.onlineStatus, online });
  }, [online]);

  // The static assets the manifest lists in `offline.precache`: the service worker keeps them.
  const precache = JSON.stringify(app.offline_precache ?? []);
  useEffect(() => {
    const urls = JSON.parse(precache) as string[];
    const worker = typeof navigator !== "undefined" ? navigator.serviceWorker?.controller : null;
    if (urls.length > 0 && worker) worker.postMessage({ type: "moebius:precache-app", appId: app.id, urls });
  }, [app.id, precache]);

  // The shell's theme choice, the system's scheme under "system", or the platform's theme changed.
  useEffect(() => {
    const update = () => {
      if (inited.current) post({ type: TO_FRAME.frameTheme, ...frameTheme() });
    };
    const scheme = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
    scheme?.addEventListener("change", update);
    const stop = themeStore.subscribe(update);
    const stopCustom = customThemeStore.subscribe(update);
    return () => {
      stop();
      stopCustom();
      scheme?.removeEventListener("change", update);
    };
  }, []);

  // The frame's box moved or resized (rotation, window size, the chrome around it hiding).
  useEffect(() => {
    const update = () => sendInsets();
    const frame = frameRef.current;
    const observer = frame ? new ResizeObserver(update) : null;
    if (frame) observer?.observe(frame);
    window.addEventListener("resize", update);
    update();
    return () => {
      observer?.disconnect();
      window.removeEventListener("resize", update);
    };
    // sendInsets reads everything from refs; a new frame (element) or immersive mode is the trigger.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [attempt, immersive, tokenFailed]);

  // Escape leaves immersive mode (inside the frame, window.mobius does the same).
  useEffect(() => {
    if (!immersive) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape" && !event.defaultPrevented) setImmersive.current(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [immersive]);

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
    const host = storageHostFor(app.id, { getToken: (force) => ensureAppToken(app.id, { force }).then((h) => h?.token ?? null) });
    /**
     * The storage line the frame's runtime asked for (`moebius:storage-port-request`): a direct
     * MessagePort, used for storage answers and notices once the frame said it took it (an older
     * runtime never does, and keeps the window messages).
     */
    let storagePort: MessagePort | null = null;
    let storagePortReady = false;
    const sink: FrameSink = { post: (message) => (storagePort && storagePortReady ? storagePort.postMessage(message) : post(message)) };
    const answerRpc = (message: Extract<FrameMessage, { type: typeof FROM_FRAME.storageRpc }>, reply: (message: ToFrameMessage) => void) => {
      host.call(message.method, message.args, sink).then(
        (result) => reply({ type: TO_FRAME.storageRpcResult, requestId: message.requestId, ok: true, result }),
        (error: unknown) => reply({ type: TO_FRAME.storageRpcResult, requestId: message.requestId, ok: false, error: wireError(error) }),
      );
    };
    const openStoragePort = () => {
      storagePort?.close();
      const channel = new MessageChannel();
      const port = channel.port1;
      storagePort = port;
      storagePortReady = false;
      port.onmessage = (event: MessageEvent) => {
        if (storagePort !== port) return;
        const data = event.data as { type?: unknown } | null;
        if (data && data.type === FROM_FRAME.storagePortReady) {
          storagePortReady = true;
          return;
        }
        const message = parseFrameMessage(event.data);
        if (message?.type === FROM_FRAME.storageRpc) answerRpc(message, (answer) => port.postMessage(answer));
      };
      post({ type: TO_FRAME.storagePort }, [channel.port2]);
    };
    /** One entry per history entry pushed above the app's, bottom first. */
    const navStack: NavEntry[] = [];
    /** Screens the browser's Forward could bring back (closed, their entry still ahead in history). */
    const dormant = new Map<string, NavEntry>();
    /** Forward onto a screen, waiting for the app's answer. */
    const forwarding = new Map<string, ReturnType<typeof setTimeout>>();
    let immersiveOn = false;
    let navSeq = 0;
    /** The depth of in-app entries this canvas started on (above 0 after a reload on a screen). */
    let baseDepth = appNavDepth();

    /** Closes `entry`: goes Back over its history entry when that is the current one. */
    const closeEntry = (entry: NavEntry) => {
      entry.closed = true;
      const top = navStack[navStack.length - 1];
      if (top === entry && (history.state as { appNav?: string } | null)?.appNav === entry.id) history.back();
    };

    /** The shell's decision; `fromHistory` when Back already removed immersive's entry. */
    const applyImmersive = (value: boolean, fromHistory = false) => {
      if (value !== immersiveOn) {
        immersiveOn = value;
        if (value) {
          pushAppNav(IMMERSIVE_NAV_ID);
          navStack.push({ id: IMMERSIVE_NAV_ID, immersive: true, closed: false, reversible: false });
        } else if (!fromHistory) {
          const entry = navStack.findLast((e) => e.immersive && !e.closed);
          if (entry) closeEntry(entry);
        }
        setImmersiveState(value);
        latest.current.onImmersiveChange?.(value);
      }
      // Answered even when nothing changed: the frame's state follows the shell's.
      post({ type: TO_FRAME.immersiveState, value });
    };
    setImmersive.current = (value) => applyImmersive(value);

    const pushScreen = (requestId: string | null, reversible: boolean) => {
      const id = requestId ?? `nav-shell-${Date.now()}-${(navSeq += 1)}`;
      const open = navStack.filter((e) => !e.immersive && !e.closed).length;
      if (document.visibilityState !== "visible" || open >= MAX_NAV_ENTRIES) {
        post({ type: TO_FRAME.navPushRejected, requestId: id });
        return;
      }
      try {
        pushAppNav(id);
      } catch {
        post({ type: TO_FRAME.navPushRejected, requestId: id });
        return;
      }
      navStack.push({ id, immersive: false, closed: false, reversible });
      // A new screen discards the Forward branch.
      dormant.clear();
      post({ type: TO_FRAME.navPushAck, requestId: id });
    };

    /** Forward did not bring the screen back: leave its (now empty) history entry again. */
    const undoForward = (id: string) => {
      const timer = forwarding.get(id);
      if (timer === undefined) return;
      clearTimeout(timer);
      forwarding.delete(id);
      const entry = navStack.findLast((e) => e.id === id && !e.closed);
      if (!entry) return;
      entry.closed = true;
      // The app may have taken it back after all (a late ack): tell it the screen is gone.
      post({ type: TO_FRAME.navBack, requestId: id });
      if ((history.state as { appNav?: string } | null)?.appNav === id) history.back();
    };

    const denyCapability = (requestId: string, capability: string, code: string, name: string, message: string) =>
      post({ type: TO_FRAME.capabilityError, requestId, capability, code, name, message });

    const handle = (message: FrameMessage) => {
      const current = latest.current;
      switch (message.type) {
        case FROM_FRAME.frameHello:
          frameReady.current = true;
          helloSeen.current = true;
          sendInit();
          return;
        case FROM_FRAME.moduleRequest:
          post({ type: TO_FRAME.moduleAck, requestId: message.requestId, appId: current.app.id });
          void fetchModule(current.app).then((answer) => {
            if (answer.ok) post({ type: TO_FRAME.moduleResult, requestId: message.requestId, appId: current.app.id, ok: true, bytes: answer.bytes }, [answer.bytes]);
            else post({ type: TO_FRAME.moduleResult, requestId: message.requestId, appId: current.app.id, ok: false, error: answer.error });
          });
          return;
        case FROM_FRAME.tokenExpired:
          void current.token.refresh(true).finally(() => sendInit());
          return;
        case FROM_FRAME.frameMounted:
          setPhase({ kind: "mounted" });
          mounted.current = true;
          // The app's own listeners are registered by now (its effects ran before this one).
          post({ type: TO_FRAME.frameVisibility, visible: document.visibilityState === "visible" });
          deliverIntent();
          return;
        case FROM_FRAME.appIntentApplied:
          if (message.nonce === pendingIntent.current) {
            clearTimeout(intentTimer.current);
            setApplyingIntent(false);
          }
          return;
        case FROM_FRAME.frameError:
          setPhase({ kind: "failed", message: message.error.message || "This app couldn't start." });
          telemetry.reportError(current.app.id, `${message.error.code}: ${message.error.message}`, "frame-load");
          return;
        case FROM_FRAME.storageRpc:
          answerRpc(message, post);
          return;
        case FROM_FRAME.storagePortRequest:
          openStoragePort();
          return;
        case FROM_FRAME.storageSet:
        case FROM_FRAME.storageRemove:
        case FROM_FRAME.storageClear:
          recordFrameLocal(current.app.id, message);
          return;
        case FROM_FRAME.newChat:
          current.onHostRequest({ kind: "new-chat", title: message.title, draft: message.draft });
          return;
        case FROM_FRAME.openChat:
          current.onHostRequest({ kind: "open-chat", chatId: message.chatId, draft: message.draft });
          return;
        case FROM_FRAME.openApp:
          current.onHostRequest({ kind: "open-app", appId: message.appId, intent: message.intent });
          return;
        case FROM_FRAME.installApp:
          // Only an app whose manifest asks for manage_apps; the install still goes through
          // the owner's review in the shell.
          if (managesApps(current.app)) current.onHostRequest({ kind: "install-app", source: message.source });
          return;
        case FROM_FRAME.manageApp:
          // Likewise: the owner sees the update preview or the uninstall choice, and decides.
          if (managesApps(current.app)) current.onHostRequest({ kind: "manage-app", action: message.action, appId: message.appId });
          return;
        case FROM_FRAME.openSettings:
          current.onHostRequest({ kind: "open-settings", section: message.section });
          return;
        case FROM_FRAME.navPush:
          pushScreen(message.requestId, message.reversible);
          return;
        case FROM_FRAME.navPop: {
          const entry = navStack.findLast((e) => !e.immersive && !e.closed && (message.requestId === null || e.id === message.requestId));
          if (entry) closeEntry(entry);
          return;
        }
        case FROM_FRAME.navForwardAck: {
          const timer = forwarding.get(message.requestId);
          if (timer !== undefined) clearTimeout(timer);
          forwarding.delete(message.requestId);
          return;
        }
        case FROM_FRAME.navForwardRejected:
          undoForward(message.requestId);
          return;
        case FROM_FRAME.capabilityOpen: {
          const declared = current.app.capability_contract?.runtime?.[message.capability];
          if (document.visibilityState !== "visible") denyCapability(message.requestId, message.capability, "not_active", "InvalidStateError", "This app is not on screen.");
          else if (!declared) denyCapability(message.requestId, message.capability, "undeclared", "NotAllowedError", `${message.capability} is not declared in this app's manifest.`);
          else denyCapability(message.requestId, message.capability, "unavailable", "NotSupportedError", `This Möbius does not provide ${message.capability}.`);
          return;
        }
        case FROM_FRAME.capabilityControl:
          // No provider runs a session here, so there is nothing to control.
          return;
        case FROM_FRAME.immersive:
          applyImmersive(message.value);
          return;
        case FROM_FRAME.appError:
          if (message.report) current.onHostRequest({ kind: "report", message: message.message });
          else {
            console.warn(`[${current.app.name}] ${message.message}`);
            telemetry.reportError(current.app.id, message.message);
          }
          return;
      }
    };

    const onMessage = (event: MessageEvent) => {
      const message = readFrameMessage(event, frameRef.current?.contentWindow, location.origin);
      if (message) handle(message);
    };
    // Back from an in-app screen (tell the frame which screens closed) or from immersive mode;
    // Forward onto a screen the app can bring back.
    const onPop = () => {
      // Back below where this canvas started (entries left by an earlier page): start from there.
      baseDepth = Math.min(baseDepth, appNavDepth());
      const depth = appNavDepth() - baseDepth;
      while (navStack.length > depth) {
        const entry = navStack.pop();
        if (entry === undefined) break;
        const timer = forwarding.get(entry.id);
        if (timer !== undefined) {
          clearTimeout(timer);
          forwarding.delete(entry.id);
        }
        if (entry.reversible) dormant.set(entry.id, entry);
        if (entry.closed) continue;
        entry.closed = true;
        if (entry.immersive) applyImmersive(false, true);
        else post({ type: TO_FRAME.navBack, requestId: entry.id });
      }
      if (depth <= navStack.length) return;
      const id = (history.state as { appNav?: string } | null)?.appNav;
      const entry = id === undefined ? undefined : dormant.get(id);
      if (depth !== navStack.length + 1 || !entry) {
        // Forward onto a screen nothing can show: step back off it.
        history.back();
        return;
      }
      dormant.delete(entry.id);
      entry.closed = false;
      navStack.push(entry);
      forwarding.set(
        entry.id,
        setTimeout(() => undoForward(entry.id), NAV_FORWARD_TIMEOUT_MS),
      );
      post({ type: TO_FRAME.navForward, requestId: entry.id });
    };
    window.addEventListener("message", onMessage);
    window.addEventListener("popstate", onPop);
    return () => {
      window.removeEventListener("message", onMessage);
      window.removeEventListener("popstate", onPop);
      storagePort?.close();
      storagePort = null;
      for (const timer of forwarding.values()) clearTimeout(timer);
      host.detach(sink);
      // A new frame (or none) starts with the chrome shown.
      setImmersive.current = () => undefined;
      if (immersiveOn) {
        setImmersiveState(false);
        latest.current.onImmersiveChange?.(false);
      }
    };
    // One broker per app and frame instance.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [app.id, attempt]);

  const retry = () => {
    frameReady.current = false;
    helloSeen.current = false;
    inited.current = false;
    mounted.current = false;
    pendingIntent.current = null;
    sentInsets.current = "";
    setPhase({ kind: "loading" });
    if (token.status === "failed") void token.refresh(true);
    setAttempt((n) => n + 1);
  };

  const failure = phase.kind === "failed" ? phase.message : tokenFailed ? "Couldn't get this app ready to run." : null;

  return (
    <div className="app-canvas" data-phase={failure ? "failed" : phase.kind} data-immersive={immersive || undefined}>
      {!tokenFailed && (
        <iframe
          key={attempt}
          ref={frameRef}
          className="app-frame"
          src={app.frame_url}
          sandbox={FRAME_SANDBOX}
          title={app.name}
          allow="fullscreen"
          onLoad={() => {
            frameReady.current = true;
            sendInit();
          }}
        />
      )}
      {immersive && (
        <button
          type="button"
          className="app-immersive-exit"
          aria-label="Exit full screen"
          title="Exit full screen"
          onClick={() => setImmersive.current(false)}
        >
          <Icon name="minimize" size={18} />
        </button>
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
        (phase.kind === "loading" || applyingIntent) && (
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
