//! One open chat: its detail snapshot, the reducer that folds the stream into it, the stream
//! connection (resume by seq, backoff, wake on visibility/online, resync), and the owner's
//! actions — send, regenerate, steer (typed text or queued rows), answer, stop (with the
//! cleared-queue re-send), queue edits, retry.

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { flushSync } from "react-dom";
import { appsKey } from "../api/apps";
import { ApiError, reportUnauthorized } from "../api/client";
import {
  chatKey,
  chatsKey,
  createChat,
  editPending,
  fetchChat,
  regenerateReply,
  removePending,
  sendAnswers,
  sendMessage,
  stopChat,
} from "../api/chats";
import type { Attachment } from "../api/protocol.gen";
import type { ApprovalAnswers, ChatPage, QuestionAnswers, StreamEvent } from "../api/types";
import { readToken } from "../auth/token";
import { setStreaming } from "../shell/activity";
import { announceAppPreview } from "../shell/appEvents";
import { recheckOnline, useOnline } from "../shell/online";
import { newCid, resolveStopResend, snapshotQueue, takeQueued } from "./queue";
import { chatReducer, emptyChat, fromDetail, queueOf, toDetail, type ChatState } from "./reducer";
import { notifyChatEvent, sendContext } from "./events";
import { backoffDelay, connReducer, initialConn, shouldReconnectOnWake, type ConnState } from "./reconnect";
import { runStream } from "./sse";

/** What a send came to, for the composer. */
export type SendOutcome = "sent" | "no_provider" | "question_open" | "failed";

/** What steering queued rows came to; `text` is what the composer gets back when it failed. */
export interface SteerQueuedOutcome {
  outcome: SendOutcome | "nothing";
  text: string | null;
}

export interface ChatHandle {
  state: ChatState;
  conn: ConnState;
  /** True until the first snapshot (cached or fetched) is on screen. */
  loading: boolean;
  loadError: unknown;
  loadingOlder: boolean;
  loadOlder: () => void;
  /** Sends a message (with the files it carries, already uploaded). */
  send: (text: string, cid?: string, attachments?: Attachment[]) => Promise<SendOutcome>;
  /** A new version of the reply to the owner's message at `messageIdx` (the last one), given the
   *  versions on screen; the owner's message is not sent again. */
  regenerate: (messageIdx: number, versions: number) => Promise<SendOutcome>;
  /** Sends into the running turn (`steer: true`); the server queues it when the CLI can't. */
  steer: (text: string) => Promise<SendOutcome>;
  /** Takes these queued rows back from the server and steers them in as one message. */
  steerQueued: (cids: readonly string[]) => Promise<SteerQueuedOutcome>;
  /** A steer of queued rows is on its way. */
  steeringQueue: boolean;
  answer: (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => Promise<void>;
  /** Stops the turn; the queued messages it clears are sent as one new turn unless `discard`. */
  stop: (options?: { discard?: boolean }) => Promise<void>;
  stopping: boolean;
  editQueued: (cid: string, content: string) => Promise<boolean>;
  removeQueued: (cid: string) => Promise<void>;
  retryConnection: () => void;
}

export function useChat(chatId: string): ChatHandle {
  const queryClient = useQueryClient();
  const online = useOnline();
  const detail = useQuery({
    queryKey: chatKey(chatId),
    queryFn: ({ signal }) => fetchChat(chatId, { signal }),
    // A snapshot a few seconds old is fine: the stream replays everything after its seq.
    staleTime: 5_000,
    retry: false,
  });

  const [state, dispatch] = useReducer(chatReducer, chatId, (id) => {
    const cached = queryClient.getQueryData<ChatPage>(chatKey(id));
    return cached ? fromDetail(cached) : emptyChat(id);
  });
  const [conn, connDispatch] = useReducer(connReducer, initialConn);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [steeringQueue, setSteeringQueue] = useState(false);

  const stateRef = useRef(state);
  const connRef = useRef(conn);
  const cursorRef = useRef(state.seq);
  const lastReadRef = useRef(0);
  const wakeRef = useRef<(() => void) | null>(null);
  useEffect(() => {
    stateRef.current = state;
    connRef.current = conn;
  });

  // A fetched snapshot replaces local state unless the stream is already further along.
  const snapshot = detail.data;
  const [appliedSnapshot, setAppliedSnapshot] = useState<ChatPage | undefined>(undefined);
  if (snapshot && snapshot !== appliedSnapshot) {
    setAppliedSnapshot(snapshot);
    if (snapshot.seq >= state.seq || state.seq === 0) dispatch({ type: "snapshot", detail: snapshot });
  }
  useEffect(() => {
    if (state.seq > cursorRef.current) cursorRef.current = state.seq;
  }, [state.seq]);

  const ready = state.seq > 0 || snapshot !== undefined;
  // Stable across renders, so the action callbacks below (and the memoised rows) stay stable.
  const { refetch } = detail;

  // The stream: one loop per open chat while online.
  useEffect(() => {
    if (!ready) return;
    if (!online) {
      connDispatch({ type: "offline", now: Date.now() });
      return;
    }
    connDispatch({ type: "online" });
    let cancelled = false;
    let attempt: AbortController | null = null;
    let cutSleep: (() => void) | null = null;

    const wake = () => {
      attempt?.abort();
      cutSleep?.();
    };
    wakeRef.current = wake;

    const refetchSnapshot = async () => {
      const fresh = await queryClient.fetchQuery({ queryKey: chatKey(chatId), queryFn: () => fetchChat(chatId), staleTime: 0 });
      dispatch({ type: "snapshot", detail: fresh });
      cursorRef.current = fresh.seq;
    };

    void (async () => {
      let failures = 0;
      while (!cancelled) {
        connDispatch({ type: "connect", now: Date.now() });
        attempt = new AbortController();
        let resync = false;
        const token = readToken();
        const end = await runStream({
          url: `/api/chats/${encodeURIComponent(chatId)}/stream`,
          token,
          lastEventId: String(cursorRef.current),
          signal: attempt.signal,
          onRead: (now) => {
            lastReadRef.current = now;
          },
          onMessage: (message) => {
            let event: StreamEvent;
            try {
              event = JSON.parse(message.data) as StreamEvent;
            } catch {
              return;
            }
            if (event.type === "resync") {
              resync = true;
              attempt?.abort();
              return;
            }
            if (event.type === "catch_up_done") {
              failures = 0;
              connDispatch({ type: "live" });
            }
            dispatch({ type: "event", event });
            notifyChatEvent(chatId, event.type);
            if (typeof event.seq === "number" && event.seq > cursorRef.current) cursorRef.current = event.seq;
            if (event.type === "done" || event.type === "chat_renamed") void queryClient.invalidateQueries({ queryKey: chatsKey });
            if (event.type === "app_updated" && typeof event.app_id === "number") {
              void queryClient.invalidateQueries({ queryKey: appsKey });
              announceAppPreview({ appId: event.app_id, chatId });
            }
          },
        });
        if (cancelled) return;
        if (resync) {
          try {
            await refetchSnapshot();
            continue;
          } catch {
            // Fall through to the backoff below.
          }
        }
        if (end.kind === "http" && end.status === 401) {
          reportUnauthorized(new ApiError(401, "unauthorized", "Session ended."), token);
          return;
        }
        if (end.kind === "http" && (end.status === 404 || end.status === 410)) {
          connDispatch({ type: "close" });
          void queryClient.invalidateQueries({ queryKey: chatsKey });
          return;
        }
        const woken = end.kind === "aborted";
        connDispatch({ type: "lost", now: Date.now() });
        if (end.kind === "network") void recheckOnline();
        failures += 1;
        const delay = woken ? 0 : backoffDelay(failures);
        if (delay > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, delay);
            cutSleep = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          cutSleep = null;
        }
      }
    })();

    return () => {
      cancelled = true;
      wakeRef.current = null;
      attempt?.abort();
      cutSleep?.();
      connDispatch({ type: "close" });
    };
  }, [chatId, ready, online, queryClient]);

  // Resume after the phone sleeps: a visible page with a dead or silent stream reconnects now.
  useEffect(() => {
    const onWake = () => {
      if (document.visibilityState !== "visible") return;
      if (shouldReconnectOnWake(connRef.current, lastReadRef.current, Date.now())) wakeRef.current?.();
    };
    document.addEventListener("visibilitychange", onWake);
    window.addEventListener("online", onWake);
    window.addEventListener("pageshow", onWake);
    return () => {
      document.removeEventListener("visibilitychange", onWake);
      window.removeEventListener("online", onWake);
      window.removeEventListener("pageshow", onWake);
    };
  }, []);

  useEffect(() => {
    setStreaming(chatId, state.running);
    return () => setStreaming(chatId, false);
  }, [chatId, state.running]);

  // Leaving the chat keeps what it showed, so coming back paints at once.
  useEffect(
    () => () => {
      const last = stateRef.current;
      if (last.seq > 0) queryClient.setQueryData(chatKey(chatId), toDetail(last));
    },
    [chatId, queryClient],
  );

  const loadOlder = useCallback(() => {
    const current = stateRef.current;
    if (loadingOlder || !current.hasMore || current.offset <= 0) return;
    setLoadingOlder(true);
    fetchChat(chatId, { before: current.offset })
      .then((page) => dispatch({ type: "older", page }))
      .catch(() => undefined)
      .finally(() => setLoadingOlder(false));
  }, [chatId, loadingOlder]);

  const deliver = useCallback(
    async (text: string, cid: string, steer: boolean, attachments?: Attachment[]): Promise<SendOutcome> => {
      const files = attachments && attachments.length > 0 ? attachments : undefined;
      if (steer) dispatch({ type: "steer_local", cid, content: text, ts: Date.now() });
      else dispatch({ type: "send_local", cid, content: text, ts: Date.now(), ...(files ? { attachments: files } : {}) });
      const context = await sendContext(chatId);
      const extra = { ...(context ? { agent_context: context } : {}), ...(files ? { attachments: files.map((a) => a.name) } : {}) };
      const post = () => sendMessage(chatId, steer ? { content: text, cid, steer, ...extra } : { content: text, cid, ...extra });
      try {
        let result;
        try {
          result = await post();
        } catch (error) {
          if (error instanceof ApiError && error.code === "chat_not_found") {
            await createChat({ id: chatId });
            result = await post();
          } else if (error instanceof ApiError && error.isNetwork && navigator.onLine) {
            // The answer was lost, not necessarily the message: the same cid makes this safe.
            result = await post();
          } else throw error;
        }
        dispatch({ type: "send_result", cid, result });
        notifyChatEvent(chatId, "message_sent");
        void queryClient.invalidateQueries({ queryKey: chatsKey });
        return "sent";
      } catch (error) {
        dispatch({ type: "send_failed", cid });
        if (error instanceof ApiError && error.code === "provider_not_connected") return "no_provider";
        if (error instanceof ApiError && error.code === "pending_question_open") {
          void refetch();
          return "question_open";
        }
        if (error instanceof ApiError && error.isNetwork) void recheckOnline();
        return "failed";
      }
    },
    [chatId, queryClient, refetch],
  );

  const send = useCallback(
    (text: string, reuseCid?: string, attachments?: Attachment[]) => deliver(text, reuseCid ?? newCid(), false, attachments),
    [deliver],
  );
  const steer = useCallback((text: string) => deliver(text, newCid(), true), [deliver]);

  const regenerate = useCallback(
    async (messageIdx: number, versions: number): Promise<SendOutcome> => {
      const post = () => regenerateReply(chatId, { message_idx: messageIdx, versions });
      try {
        let result;
        try {
          result = await post();
        } catch (error) {
          // The answer was lost, not necessarily the request: `versions` makes a repeat safe.
          if (error instanceof ApiError && error.isNetwork && navigator.onLine) result = await post();
          else throw error;
        }
        dispatch({ type: "regenerate_result", result });
        void queryClient.invalidateQueries({ queryKey: chatsKey });
        return "sent";
      } catch (error) {
        if (error instanceof ApiError && error.code === "provider_not_connected") return "no_provider";
        if (error instanceof ApiError && error.code === "pending_question_open") {
          void refetch();
          return "question_open";
        }
        // The chat moved on (a turn started elsewhere, a newer message): show what it is now.
        if (error instanceof ApiError && (error.code === "chat_busy" || error.code === "not_regenerable")) void refetch();
        if (error instanceof ApiError && error.isNetwork) void recheckOnline();
        return "failed";
      }
    },
    [chatId, queryClient, refetch],
  );

  const steerQueued = useCallback(
    async (cids: readonly string[]): Promise<SteerQueuedOutcome> => {
      const wanted = new Set(cids);
      const rows = queueOf(stateRef.current).filter((row) => row.confirmed && wanted.has(row.cid));
      if (rows.length === 0) return { outcome: "nothing", text: null };
      setSteeringQueue(true);
      try {
        const { text, unreachable } = await takeQueued(
          rows,
          (cid) => removePending(chatId, cid),
          (pending) => dispatch({ type: "pending_replaced", pending }),
        );
        // Rows the server could not be asked about stay queued; nothing of theirs is lost.
        if (text === null) return { outcome: unreachable > 0 ? "failed" : "nothing", text: null };
        const outcome = await steer(text);
        return { outcome, text: outcome === "sent" ? null : text };
      } finally {
        setSteeringQueue(false);
      }
    },
    [chatId, steer],
  );

  const answer = useCallback(
    async (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => {
      dispatch({ type: "answer_local", questionId, answers });
      try {
        const result = await sendAnswers(chatId, { cid: newCid(), question_id: questionId, answers });
        if (result.status === "started") dispatch({ type: "send_result", cid: "", result });
      } catch (error) {
        dispatch({ type: "answer_local", questionId, answers: null });
        if (error instanceof ApiError && error.code === "question_stale") void refetch();
        throw error;
      }
    },
    [chatId, refetch],
  );

  const stop = useCallback(async (options?: { discard?: boolean }) => {
    if (stopping) return;
    setStopping(true);
    // Clear the tray before awaiting anything, so a racing refetch cannot bring it back.
    const snapshotOfQueue = snapshotQueue(queueOf(stateRef.current));
    flushSync(() => dispatch({ type: "queue_cleared" }));
    try {
      const result = await stopChat(chatId);
      const resend = resolveStopResend(snapshotOfQueue, result.cleared_pending_cids);
      if (resend !== null && !options?.discard) await send(resend);
    } catch {
      void refetch();
    } finally {
      setStopping(false);
    }
  }, [chatId, refetch, send, stopping]);

  const editQueued = useCallback(
    async (cid: string, content: string) => {
      const result = await editPending(chatId, cid, content);
      dispatch({ type: "pending_replaced", pending: result.pending_messages });
      return result.updated;
    },
    [chatId],
  );

  const removeQueued = useCallback(
    async (cid: string) => {
      const result = await removePending(chatId, cid);
      dispatch({ type: "pending_replaced", pending: result.pending_messages });
    },
    [chatId],
  );

  const retryConnection = useCallback(() => {
    connDispatch({ type: "retry_now" });
    wakeRef.current?.();
  }, []);

  return {
    state,
    conn,
    loading: !ready && detail.isPending,
    loadError: ready ? null : detail.error,
    loadingOlder,
    loadOlder,
    send,
    regenerate,
    steer,
    steerQueued,
    steeringQueue,
    answer,
    stop,
    stopping,
    editQueued,
    removeQueued,
    retryConnection,
  };
}
