//! The open chat: paged transcript, live reply, question cards, queue tray, connection note and
//! composer, with the scroll rules — a send pins its message to the top while the reply grows
//! into a reserved spacer, follow only from the bottom, scrolling up holds, and a chat left and
//! reopened comes back exactly where it was. Far back in a long chat ("Jump to start", a search
//! hit many pages up) a bounded history window takes the transcript's place (`HistoryView`).

import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import type { Attachment, Block, ChatSummary } from "../../api/types";
import { loadAnchor, saveAnchor, saveLastChat } from "../../chat/persist";
import { queueOf, rowsOf } from "../../chat/reducer";
import { connNote } from "../../chat/reconnect";
import {
  anchorAt,
  isAtBottom,
  isAway,
  modeAfterGrowth,
  modeAfterReaderScroll,
  modeAfterSend,
  scrollTopFor,
  shouldLoadOlder,
  spacerFor,
  type Anchor,
  type ScrollMode,
} from "../../chat/scroll";
import { useChat, type SendOutcome } from "../../chat/useChat";
import { versionRows } from "../../chat/versions";
import { PAGE_SIZE, compactChat } from "../../api/chats";
import { ApiError } from "../../api/client";
import { HistoryView, MAX_WINDOW_ROWS, type HistoryTarget } from "./HistoryView";
import { useOnline } from "../../shell/online";
import { Composer } from "./Composer";
import { GoalPin } from "./GoalPin";
import { Icon } from "../ui/Icon";
import { LightboxHost } from "./Lightbox";
import { MessageRow, Progress } from "./MessageRow";
import { ModelPicker } from "./ModelPicker";
import { LimitNotice } from "./LimitNotice";
import { ProviderHint } from "./ProviderHint";
import { QueueTray } from "./QueueTray";

export interface ChatViewProps {
  chatId: string;
  owner: string;
  summary: ChatSummary | undefined;
  /** True when the owner has no chat with messages yet (first run). */
  firstRun: boolean;
  onTitle: (title: string) => void;
  onOpenSettings: () => void;
  /** A search hit to show: the message at transcript index `idx`; `n` changes with every tap. */
  focus?: { idx: number; n: number } | null;
}

/** Reader input owns the scroll until it has been quiet this long. */
const READER_QUIET_MS = 250;
/** A search hit at most this many pages above the loaded ones loads them; a farther one opens
 *  the history window around it. */
const HIT_LOAD_PAGES = 3;
/** Messages the live transcript holds before scrolling further back hands over to the history
 *  window (which stays bounded), so the page never holds thousands of rows. */
const MAX_LIVE_ROWS = 200;
const PIN_TOP_GAP_PX = 12;

/** The time, for things that start on an action (not while rendering). */
const clock = () => Date.now();

export function ChatView({ chatId, owner, firstRun, onTitle, onOpenSettings, focus = null }: ChatViewProps) {
  const chat = useChat(chatId);
  const { state } = chat;
  const online = useOnline();
  const rows = rowsOf(state);
  const queue = queueOf(state);
  const [noProviderNudge, setNoProviderNudge] = useState(false);
  const [sendError, setSendError] = useState<string | null>(null);
  const [restore, setRestore] = useState<{ id: number; text: string } | null>(null);
  /** Stop was pressed with messages queued: the owner chooses what happens to them. */
  const [stopChoice, setStopChoice] = useState(false);
  const [now, setNow] = useState(() => Date.now());

  const scrollRef = useRef<HTMLDivElement>(null);
  const contentRef = useRef<HTMLDivElement>(null);
  const spacerRef = useRef<HTMLDivElement>(null);
  const modeRef = useRef<ScrollMode>({ kind: "follow" });
  const spacerPx = useRef(0);
  const readerUntil = useRef(0);
  const restored = useRef(false);
  /** The reading position just restored: kept in place while the rows above or below it finish
   *  laying out (late pages, Markdown, code), until the reader scrolls or anything else moves. */
  const restoredAnchor = useRef<Anchor | null>(null);
  const prependRef = useRef<{ key: string; top: number } | null>(null);
  /** The `n` of the last search hit shown, and the message it highlighted. */
  const focusShown = useRef(0);
  /** The offset an older page was last asked from for the hit (a failed load is not retried). */
  const focusLoadedFrom = useRef<number | null>(null);
  const [hitIdx, setHitIdx] = useState<number | null>(null);
  /** The history window on screen instead of the live transcript, if any. */
  const [history, setHistory] = useState<HistoryTarget | null>(null);
  /** The reader is away from the newest message (offers "Jump to latest"). */
  const [away, setAway] = useState(false);
  /** The version picked of each regenerated reply, by its owner's row (the newest otherwise). */
  const [versions, setVersions] = useState<ReadonlyMap<string, number>>(new Map());
  const chooseVersion = useCallback((group: string, shown: number) => setVersions((before) => new Map(before).set(group, shown)), []);
  /** `/compact` is writing its summary (since this time): a progress row shows meanwhile. */
  const [compacting, setCompacting] = useState<number | null>(null);
  /** What the polite live region last said: a turn's start and its end, never its clock. */
  const [announcement, setAnnouncement] = useState("");

  useEffect(() => saveLastChat(owner, chatId), [owner, chatId]);

  // Screen readers hear a turn start and end (the live row's clock is not a live region).
  const [heardRunning, setHeardRunning] = useState<boolean | null>(null);
  if (!chat.loading && heardRunning !== state.running) {
    setHeardRunning(state.running);
    if (heardRunning !== null) {
      if (state.running) setAnnouncement("The agent is working.");
      else if (state.lastRun?.status === "failed") setAnnouncement("The turn failed.");
      else if (state.lastRun?.status === "stopped") setAnnouncement("The turn was stopped.");
      else setAnnouncement("The agent replied.");
    }
  }
  useEffect(() => {
    if (state.title) onTitle(state.title);
  }, [state.title, onTitle]);

  // The connection note appears only after 1.5 s: tick while the stream is down.
  useEffect(() => {
    if (chat.conn.phase === "live" || chat.conn.phase === "closed" || chat.conn.phase === "offline") return;
    const timer = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(timer);
  }, [chat.conn.phase]);
  const note = connNote(chat.conn, now);

  const setSpacer = (px: number) => {
    spacerPx.current = px;
    if (spacerRef.current) spacerRef.current.style.height = `${px}px`;
  };

  const rowEl = (key: string) =>
    contentRef.current?.querySelector<HTMLElement>(`[data-key="${key.replace(/["\\]/g, "\\$&")}"]`) ?? null;

  /** Applies the scroll mode to the current layout (after growth, a send or a resize). */
  const layoutPass = useCallback(() => {
    const box = scrollRef.current;
    const content = contentRef.current;
    if (!box || !content || Date.now() < readerUntil.current) return;
    const mode = modeRef.current;
    const anchor = restoredAnchor.current;
    if (anchor && mode.kind === "hold") {
      const row = rowEl(anchor.key);
      if (row) box.scrollTop = scrollTopFor(anchor, row.offsetTop, box);
      return;
    }
    if (mode.kind === "pin") {
      const row = rowEl(mode.key);
      if (!row) return;
      const contentEnd = content.offsetTop + content.offsetHeight;
      const spacer = spacerFor(box.clientHeight, row.offsetTop, contentEnd, PIN_TOP_GAP_PX);
      setSpacer(spacer);
      modeRef.current = modeAfterGrowth(mode, spacer);
      box.scrollTop = Math.max(0, row.offsetTop - PIN_TOP_GAP_PX);
      return;
    }
    if (mode.kind === "follow") {
      if (spacerPx.current > 0) setSpacer(0);
      box.scrollTop = box.scrollHeight;
    }
  }, []);

  // First paint of a chat: restore the saved reading position, else show the latest.
  useLayoutEffect(() => {
    const box = scrollRef.current;
    if (restored.current || !box || rows.length === 0) return;
    restored.current = true;
    const anchor = loadAnchor(owner, chatId);
    const row = anchor ? rowEl(anchor.key) : null;
    if (anchor && row) {
      modeRef.current = { kind: "hold" };
      box.scrollTop = scrollTopFor(anchor, row.offsetTop, box);
      modeRef.current = isAtBottom(box) ? { kind: "follow" } : { kind: "hold" };
      if (modeRef.current.kind === "hold") restoredAnchor.current = anchor;
    } else {
      modeRef.current = { kind: "follow" };
      box.scrollTop = box.scrollHeight;
    }
  });

  // Older messages were prepended: keep the row that was on top exactly where it was.
  useLayoutEffect(() => {
    const box = scrollRef.current;
    const before = prependRef.current;
    if (!box || !before) return;
    const row = rowEl(before.key);
    if (row) box.scrollTop += row.offsetTop - before.top;
    prependRef.current = null;
  }, [state.offset]);

  const { loading, loadingOlder, loadOlder } = chat;
  // A hit far up opens the history window around it rather than loading every page in between
  // (decided while rendering, once per tap).
  const [farHit, setFarHit] = useState<number | null>(null);
  if (focus && farHit !== focus.n && !loading && focus.idx < state.offset - HIT_LOAD_PAGES * PAGE_SIZE) {
    setFarHit(focus.n);
    setHistory({ kind: "around", idx: focus.idx, n: focus.n });
  }
  // A search hit above the loaded page: load older pages until its message is here. (A passive
  // effect: `loadOlder` reads the state the chat hook records in its own effect.)
  useEffect(() => {
    if (!focus || focusShown.current === focus.n || loading || loadingOlder || focus.idx >= state.offset) return;
    if (farHit === focus.n) return;
    if (!state.hasMore || focusLoadedFrom.current === state.offset) {
      focusShown.current = focus.n;
      return;
    }
    focusLoadedFrom.current = state.offset;
    loadOlder();
  }, [focus, farHit, loading, loadingOlder, loadOlder, state.offset, state.hasMore]);

  // The hit's message is on the page: centre it and mark it, before the browser paints.
  useLayoutEffect(() => {
    const box = scrollRef.current;
    if (!focus || focusShown.current === focus.n || !box || loading || focus.idx < state.offset) return;
    focusShown.current = focus.n;
    const row = contentRef.current?.querySelector<HTMLElement>(`[data-idx="${focus.idx}"]`);
    if (!row) return;
    restored.current = true;
    restoredAnchor.current = null;
    modeRef.current = { kind: "hold" };
    readerUntil.current = 0;
    if (spacerPx.current > 0) setSpacer(0);
    box.scrollTop = Math.max(0, row.offsetTop - (box.clientHeight - row.offsetHeight) / 2);
    setHitIdx(focus.idx);
  }, [focus, loading, state.offset]);

  // Content growth (streaming, tool output, late Markdown) re-applies the mode.
  useLayoutEffect(() => {
    layoutPass();
  });
  useEffect(() => {
    const content = contentRef.current;
    const box = scrollRef.current;
    if (!content || !box) return;
    const observer = new ResizeObserver(() => layoutPass());
    observer.observe(content);
    observer.observe(box);
    return () => observer.disconnect();
  }, [layoutPass]);

  const saveReadingPosition = useCallback(() => {
    const box = scrollRef.current;
    const content = contentRef.current;
    if (!box || !content || !restored.current) return;
    const rowsInDom = [...content.querySelectorAll<HTMLElement>("[data-key]")].map((el) => ({
      key: el.dataset.key ?? "",
      top: el.offsetTop,
      bottom: el.offsetTop + el.offsetHeight,
    }));
    saveAnchor(owner, chatId, isAtBottom(box) && modeRef.current.kind === "follow" ? null : anchorAt(rowsInDom, box.scrollTop));
  }, [owner, chatId]);

  // A layout effect: its cleanup runs while the scroll box is still attached, so leaving the
  // chat right after a scroll (before it settles) still saves where the reader was.
  useLayoutEffect(() => {
    const save = () => saveReadingPosition();
    window.addEventListener("pagehide", save);
    document.addEventListener("visibilitychange", save);
    return () => {
      save();
      window.removeEventListener("pagehide", save);
      document.removeEventListener("visibilitychange", save);
    };
  }, [saveReadingPosition]);

  // Reader input: while it lasts (and 250 ms after), no programmatic scroll happens.
  useEffect(() => {
    const box = scrollRef.current;
    if (!box) return;
    const mark = () => {
      restoredAnchor.current = null;
      readerUntil.current = Date.now() + READER_QUIET_MS;
    };
    const hold = () => {
      restoredAnchor.current = null;
      readerUntil.current = Date.now() + 2_000;
    };
    box.addEventListener("wheel", mark, { passive: true });
    box.addEventListener("touchstart", hold, { passive: true });
    box.addEventListener("touchmove", hold, { passive: true });
    box.addEventListener("touchend", mark, { passive: true });
    box.addEventListener("keydown", mark);
    box.addEventListener("pointerdown", mark);
    return () => {
      box.removeEventListener("wheel", mark);
      box.removeEventListener("touchstart", hold);
      box.removeEventListener("touchmove", hold);
      box.removeEventListener("touchend", mark);
      box.removeEventListener("keydown", mark);
      box.removeEventListener("pointerdown", mark);
    };
  }, []);

  const settleTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const onScroll = () => {
    const box = scrollRef.current;
    if (!box) return;
    setAway(isAway(box, spacerPx.current));
    if (Date.now() < readerUntil.current) {
      readerUntil.current = Math.max(readerUntil.current, Date.now() + READER_QUIET_MS);
      if (settleTimer.current) clearTimeout(settleTimer.current);
      settleTimer.current = setTimeout(() => {
        modeRef.current = modeAfterReaderScroll(modeRef.current, box, spacerPx.current);
        saveReadingPosition();
      }, READER_QUIET_MS);
    }
    if (shouldLoadOlder(box, state.hasMore, loadingOlder) && restored.current && state.messages.length >= MAX_LIVE_ROWS) {
      // Far enough back: the history window takes over right where the reader is.
      const settled = state.messages.filter((m) => !m.sending).slice(0, MAX_WINDOW_ROWS);
      const top = rows.find((r) => {
        const el = r.idx === undefined ? null : rowEl(r.key);
        return el !== null && el.offsetTop + el.offsetHeight > box.scrollTop;
      });
      const el = top ? rowEl(top.key) : null;
      if (top?.idx !== undefined && el && top.idx < state.offset + settled.length) {
        setHistory({
          kind: "at",
          idx: top.idx,
          top: el.offsetTop - box.scrollTop,
          initial: { start: state.offset, messages: settled, total: state.total },
          n: Date.now(),
        });
        return;
      }
    }
    if (shouldLoadOlder(box, state.hasMore, loadingOlder) && restored.current) {
      const first = rows[0];
      const el = first ? rowEl(first.key) : null;
      if (first && el) prependRef.current = { key: first.key, top: el.offsetTop };
      loadOlder();
    }
  };

  /** Back to the newest message, following the reply. */
  const jumpToLatest = () => {
    setHistory(null);
    setAway(false);
    restoredAnchor.current = null;
    modeRef.current = { kind: "follow" };
    readerUntil.current = 0;
    layoutPass();
  };

  const beforeSend = () => {
    if (history !== null) jumpToLatest();
    restoredAnchor.current = null;
    const box = scrollRef.current;
    // A send during a turn goes to the queue tray: the transcript does not move.
    if (!box || state.running) return;
    // The key is not known yet (the cid is minted in send); pin the next user row.
    modeRef.current = modeAfterSend("__next_user__");
    readerUntil.current = 0;
  };

  // Resolve a pending pin to the user row that just appeared.
  useLayoutEffect(() => {
    const mode = modeRef.current;
    if (mode.kind !== "pin" || mode.key !== "__next_user__") return;
    const lastUser = [...rows].reverse().find((r) => r.message.role === "user" && r.message.sending);
    if (lastUser) {
      modeRef.current = { kind: "pin", key: lastUser.key };
      layoutPass();
    }
  });

  const explain = (outcome: SendOutcome) => {
    if (outcome === "no_provider") setNoProviderNudge(true);
    else if (outcome === "question_open") setSendError("Answer the question above (or stop the turn) before sending.");
    else setSendError(online ? "Couldn't send your message. It's back in the box — try again." : "You're offline. Your message is kept.");
  };

  const send = async (text: string, attachments?: Attachment[]) => {
    setSendError(null);
    if (text.trim() === "/compact" && !attachments?.length) return compact();
    const outcome = await chat.send(text, undefined, attachments);
    if (outcome === "sent") return true;
    explain(outcome);
    return false;
  };

  /** `/compact` typed in the composer: the conversation so far becomes a summary a fresh
   *  session starts from (the marker arrives on the stream). */
  const compact = async () => {
    if (state.running) {
      setSendError("Wait for the turn to finish (or stop it) before compacting.");
      return false;
    }
    setCompacting(clock());
    setAnnouncement("Compacting the conversation.");
    // The progress row is the newest thing in the chat: follow it.
    jumpToLatest();
    try {
      await compactChat(chatId, crypto.randomUUID());
      setAnnouncement("The conversation was compacted.");
      return true;
    } catch (error) {
      setSendError(error instanceof ApiError ? error.message : "Couldn't compact the chat. Try again.");
      return false;
    } finally {
      setCompacting(null);
    }
  };

  const steer = async (text: string) => {
    setSendError(null);
    const outcome = await chat.steer(text);
    if (outcome === "sent") return true;
    explain(outcome);
    return false;
  };

  /** "Send now" on queued rows: a steer that failed after the server gave them back lands in the box. */
  const steerQueued = async (cids: readonly string[]) => {
    setSendError(null);
    const { outcome, text } = await chat.steerQueued(cids);
    if (outcome === "sent" || outcome === "nothing") return;
    if (text !== null) {
      setRestore((previous) => ({ id: (previous?.id ?? 0) + 1, text }));
      explain(outcome);
    } else {
      setSendError("Couldn't reach the server. The queued message is still waiting.");
    }
  };
  const questionOpen = state.pendingQuestionId !== null;
  const confirmedQueue = queue.filter((row) => row.confirmed);

  // One version of each regenerated reply shows (the picked one, else the newest).
  const shown = versionRows(rows, versions, hitIdx);

  // Edit and Regenerate apply to the last exchange only, and not while a turn runs.
  const settled = !state.running && queue.length === 0 && compacting === null;
  let lastUserIdx: number | undefined;
  let lastUserKey: string | undefined;
  let lastReply: (typeof rows)[number] | undefined;
  for (const row of shown.rows) {
    if (row.live || row.idx === undefined || row.message.hidden) continue;
    if (row.message.role === "user") {
      lastUserIdx = row.idx;
      lastUserKey = row.key;
      lastReply = undefined;
    } else lastReply = row;
  }
  // Regenerate sits under a real reply only: not under a handoff marker, an error card or a
  // turn stopped before it wrote anything.
  const realReply = (blocks: readonly Block[] | null | undefined) =>
    !!blocks &&
    !blocks.some((b) => b.type === "error" || b.type === "handoff") &&
    blocks.some((b) => b.type === "tool" || (b.type === "text" && b.content.trim() !== ""));
  const lastReplyIdx = lastReply && lastUserIdx !== undefined && realReply(lastReply.message.blocks) ? lastReply.idx : undefined;
  /** How many versions the last reply has (0: none was written). */
  const lastVersions = lastReply ? (shown.switches.get(lastReply.key)?.count ?? 1) : 0;

  /** A new version of the reply to the owner's last message; the owner's message is not sent again. */
  const regenerate = async () => {
    if (lastUserIdx === undefined) return;
    setSendError(null);
    if (lastUserKey !== undefined) {
      const group = lastUserKey;
      setVersions((before) => {
        const next = new Map(before);
        next.delete(group);
        return next;
      });
    }
    jumpToLatest();
    const outcome = await chat.regenerate(lastUserIdx, lastVersions);
    if (outcome === "failed") setSendError(online ? "Couldn't regenerate the reply. Try again." : "You're offline. Try again once you're back.");
    else if (outcome !== "sent") explain(outcome);
  };

  const regenerateLast = () => void regenerate();

  /** Retry after a failed or interrupted turn: the same message, answered again. */
  const retry = () => {
    if (lastUserIdx !== undefined) {
      void regenerate();
      return;
    }
    const lastUser = [...state.messages].reverse().find((m) => m.role === "user" && !m.hidden);
    if (lastUser) void chat.send(lastUser.content, undefined, lastUser.attachments);
  };
  const editLast = (text: string) => setRestore((previous) => ({ id: (previous?.id ?? 0) + 1, text }));

  // An error only the owner can mend (a refused key) offers its fix instead of a Retry.
  const lastRow = rows.at(-1)?.message;
  const needsFix = lastRow?.role === "assistant" && (lastRow.blocks ?? []).some((b) => b.type === "error" && b.fix);
  const failed = state.lastRun?.status === "failed" && !state.running && !needsFix;
  const interrupted = state.lastRun?.status === "interrupted" && !state.running;

  return (
    <div className="chat">
      {state.goal && <GoalPin chatId={chatId} goal={state.goal} offline={!online} />}
      {history !== null && (
        <HistoryView key={history.n} chatId={chatId} target={history} offline={!online} onAnswer={chat.answer} onLatest={jumpToLatest} />
      )}
      <div className="chat-scroll" ref={scrollRef} onScroll={onScroll} tabIndex={0} role="region" aria-label="Conversation" hidden={history !== null}>
        <div className="chat-content" ref={contentRef}>
          {state.hasMore && (
            <div className="older" role="status">
              {loadingOlder ? "Loading earlier messages…" : (
                <button type="button" className="link-button" onClick={loadOlder}>
                  Load earlier messages
                </button>
              )}
              <button type="button" className="link-button" onClick={() => setHistory({ kind: "start", n: Date.now() })}>
                <Icon name="jump-start" size={14} /> Jump to start
              </button>
            </div>
          )}
          {chat.loading && rows.length === 0 && (
            <div className="chat-loading" role="status" aria-label="Loading chat">
              <span className="skeleton skeleton-right" />
              <span className="skeleton" />
              <span className="skeleton skeleton-short" />
            </div>
          )}
          {!chat.loading && rows.length === 0 && !chat.loadError && (
            <section className="empty" aria-labelledby="empty-title">
              <svg className="empty-icon" viewBox="0 0 48 48" aria-hidden="true" focusable="false">
                <path d="M10 12h28a4 4 0 0 1 4 4v14a4 4 0 0 1-4 4H22l-8 6v-6h-4a4 4 0 0 1-4-4V16a4 4 0 0 1 4-4Z" />
              </svg>
              <h1 id="empty-title" className="empty-title">
                {firstRun ? "No chats yet" : "New chat"}
              </h1>
              <p className="empty-lead">Ask for a change, a fix or a small app. The agent works on your server.</p>
            </section>
          )}
          {chat.loadError !== null && chat.loadError !== undefined && rows.length === 0 && (
            <section className="empty" role="alert">
              <h1 className="empty-title">{online ? "Couldn't open this chat" : "This chat isn't saved for offline use"}</h1>
              <p className="empty-lead">{online ? "It may have been deleted, or the server didn't answer." : "Open it once while online to read it offline."}</p>
            </section>
          )}
          {shown.rows.map((row) => (
            <MessageRow
              key={row.key}
              rowKey={row.key}
              chatId={chatId}
              message={row.message}
              live={row.live}
              working={row.live && state.pendingQuestionId === null}
              onAnswer={chat.answer}
              offline={!online}
              idx={row.idx}
              hit={row.idx !== undefined && row.idx === hitIdx}
              onEdit={settled && row.idx === lastUserIdx ? () => editLast(row.message.content) : undefined}
              onRegenerate={settled && online && row.idx !== undefined && row.idx === lastReplyIdx ? regenerateLast : undefined}
              versions={shown.switches.get(row.key)}
              onVersion={chooseVersion}
              retry={row.live ? state.retry : null}
              waiting={row.live ? state.waiting : null}
              onOpenSettings={onOpenSettings}
            />
          ))}
          {compacting !== null && <Progress since={compacting} label="Compacting: summarising the conversation" />}
          {(failed || interrupted) && (
            <div className="turn-end" role="note">
              <span>{failed ? (state.lastRun?.error ?? "The turn failed.") : "The turn was interrupted."}</span>
              <button type="button" className="btn btn-secondary btn-small" onClick={retry} disabled={!online}>
                Retry
              </button>
            </div>
          )}
          {state.deleted && (
            <div className="turn-end" role="note">
              This chat was deleted.
            </div>
          )}
        </div>
        <div className="chat-spacer" ref={spacerRef} aria-hidden="true" />
        {away && rows.length > 0 && (
          <div className="chat-jump">
            <button type="button" className="btn btn-secondary btn-small" onClick={jumpToLatest}>
              <Icon name="jump-latest" size={16} /> Jump to latest
            </button>
          </div>
        )}
      </div>
      <div className="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </div>
      <div className="chat-bottom">
        {note && online && (
          <div className="conn-note" role="status">
            <span className="conn-spinner" aria-hidden="true" />
            {note.text}
            {note.offerRetry && (
              <button type="button" className="link-button" onClick={chat.retryConnection}>
                Retry now
              </button>
            )}
          </div>
        )}
        <ProviderHint owner={owner} forced={noProviderNudge} onOpenSettings={onOpenSettings} onDismiss={() => setNoProviderNudge(false)} />
        {sendError && (
          <p className="send-error" role="alert">
            <Icon name="alert" size={16} />
            {sendError}
          </p>
        )}
        {stopChoice && state.running && queue.length > 0 && (
          <div className="stop-choice" role="group" aria-label="Stop the turn">
            <button
              type="button"
              className="btn btn-primary btn-small"
              onClick={() => {
                setStopChoice(false);
                void chat.stop();
              }}
            >
              {queue.length === 1 ? "Stop and send the 1 queued message" : `Stop and send the ${queue.length} queued messages`}
            </button>
            <button
              type="button"
              className="btn btn-secondary btn-small"
              onClick={() => {
                setStopChoice(false);
                void chat.stop({ discard: true });
              }}
            >
              Stop and discard
            </button>
            <button type="button" className="link-button" onClick={() => setStopChoice(false)}>
              Keep working
            </button>
          </div>
        )}
        <QueueTray
          rows={queue}
          onEdit={chat.editQueued}
          onRemove={chat.removeQueued}
          onSteer={state.running ? (cid) => steerQueued([cid]) : undefined}
          steerDisabled={!online || questionOpen || chat.steeringQueue || chat.stopping}
        />
        <Composer
          key={chatId}
          owner={owner}
          chatId={chatId}
          running={state.running}
          questionOpen={questionOpen}
          offline={!online}
          stopping={chat.stopping}
          queued={confirmedQueue.length}
          steering={chat.steeringQueue}
          onSend={send}
          onSteer={steer}
          onSteerQueued={() => void steerQueued(confirmedQueue.map((row) => row.cid))}
          onStop={() => (queue.length > 0 ? setStopChoice(true) : void chat.stop())}
          onBeforeSend={beforeSend}
          waitingFor={compacting !== null ? "Compacting the conversation…" : null}
          restore={restore}
          notice={state.provider && <LimitNotice provider={state.provider} turns={state.total + (state.running ? 1 : 0)} />}
          accessory={<ModelPicker chatId={chatId} provider={state.provider} model={state.model} effort={state.effort} disabled={!online} />}
        />
      </div>
      <LightboxHost />
    </div>
  );
}
