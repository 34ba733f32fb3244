//! Reading far back in a long chat without loading everything after it: a window of at most
//! `MAX_WINDOW_ROWS` settled messages, opened at the chat's first message ("Jump to start") or
//! around one message (a search hit far up), growing a page at a time in whichever direction the
//! reader scrolls and dropping rows at the other end. The row at the top of the screen stays put
//! whenever rows come or go, so nothing jumps. "Jump to latest" goes back to the live chat.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { PAGE_SIZE, fetchChat } from "../../api/chats";
import type { ApprovalAnswers, Message, QuestionAnswers } from "../../api/types";
import { versionRows } from "../../chat/versions";
import { Icon } from "../ui/Icon";
import { MessageRow } from "./MessageRow";

/** Where the history opens: the first message; around message `idx` (a search hit); or with
 *  message `idx` at `top` pixels below the top, from messages already on screen (`initial`), so
 *  the live transcript hands over without a visible change. `n` tells two openings apart. */
export type HistoryTarget =
  | { kind: "start"; n: number }
  | { kind: "around"; idx: number; n: number }
  | { kind: "at"; idx: number; top: number; initial: HistoryWindow; n: number };

/** Most messages the window holds; beyond it, rows leave at the end away from the reader. */
export const MAX_WINDOW_ROWS = 160;
/** Pages load once the reader is this close to an end of the window. */
const LOAD_WITHIN_PX = 600;

/** A run of consecutive settled messages: `messages[0]` is message `start` of `total`. */
export interface HistoryWindow {
  start: number;
  messages: Message[];
  total: number;
}

/** The row of message `idx` in `box`. */
function rowAt(box: HTMLElement | null, idx: number): HTMLElement | null {
  return box?.querySelector<HTMLElement>(`.row[data-idx="${idx}"]`) ?? null;
}

/** The row at the top of the box's visible part, and how far below the top it starts. */
function topRow(box: HTMLElement): { idx: number; top: number } | null {
  const rows = [...box.querySelectorAll<HTMLElement>(".row[data-idx]")];
  const top = rows.find((el) => el.offsetTop + el.offsetHeight > box.scrollTop) ?? rows[0];
  return top ? { idx: Number(top.dataset.idx), top: top.offsetTop - box.scrollTop } : null;
}

/** The next window after a page arrived (`page` starts at `offset`), kept within the bound. */
export function grow(win: HistoryWindow, offset: number, page: Message[], total: number): HistoryWindow {
  const end = win.start + win.messages.length;
  if (offset < win.start) {
    // An older page: prepend what is missing, drop from the newer end.
    const older = page.slice(0, Math.max(0, Math.min(page.length, win.start - offset)));
    const messages = [...older, ...win.messages].slice(0, MAX_WINDOW_ROWS);
    return { start: win.start - older.length, messages, total };
  }
  const newer = page.slice(Math.max(0, end - offset));
  const messages = [...win.messages, ...newer];
  const drop = Math.max(0, messages.length - MAX_WINDOW_ROWS);
  return { start: win.start + drop, messages: messages.slice(drop), total };
}

export interface HistoryViewProps {
  chatId: string;
  target: HistoryTarget;
  offline: boolean;
  onAnswer: (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => Promise<void>;
  /** Back to the live chat, at its newest message. */
  onLatest: () => void;
}

/** Mount one per target (key it by `target.n`). */
export function HistoryView({ chatId, target, offline, onAnswer, onLatest }: HistoryViewProps) {
  const [win, setWin] = useState<HistoryWindow | null>(() => (target.kind === "at" ? target.initial : null));
  const [failed, setFailed] = useState(false);
  const [loading, setLoading] = useState<"older" | "newer" | null>(null);
  /** The version picked of each regenerated reply (the newest otherwise). */
  const [versions, setVersions] = useState<ReadonlyMap<string, number>>(new Map());
  const chooseVersion = useCallback((group: string, shown: number) => setVersions((before) => new Map(before).set(group, shown)), []);
  const boxRef = useRef<HTMLDivElement>(null);
  /** The row at the top of the screen before the window changed, and where it was. */
  const anchor = useRef<{ idx: number; top: number } | null>(null);
  const placed = useRef(false);

  // Open at the target: the page holding it (a search hit in its middle).
  useEffect(() => {
    if (target.kind === "at") return;
    const controller = new AbortController();
    const before = target.kind === "start" ? PAGE_SIZE : target.idx + PAGE_SIZE / 2;
    fetchChat(chatId, { before, signal: controller.signal })
      .then((page) => {
        setWin({ start: page.offset, messages: page.messages.filter((m) => !m.live), total: page.total });
        setFailed(false);
      })
      .catch(() => {
        if (!controller.signal.aborted) setFailed(true);
      });
    return () => controller.abort();
  }, [chatId, target]);

  // First paint of a window: the first message at the top, or the hit in the middle.
  useLayoutEffect(() => {
    const box = boxRef.current;
    if (!box || !win || placed.current) return;
    placed.current = true;
    if (target.kind === "start") {
      box.scrollTop = 0;
      return;
    }
    const row = rowAt(box, target.idx);
    if (!row) return;
    if (target.kind === "at") box.scrollTop = row.offsetTop - target.top;
    else box.scrollTop = Math.max(0, row.offsetTop - (box.clientHeight - row.offsetHeight) / 2);
  }, [win, target]);

  // Rows came or went: put the row that was at the top back where it was.
  useLayoutEffect(() => {
    const box = boxRef.current;
    const was = anchor.current;
    if (!box || !was) return;
    anchor.current = null;
    const row = rowAt(box, was.idx);
    if (row) box.scrollTop = row.offsetTop - was.top;
  }, [win]);

  const load = useCallback(
    (direction: "older" | "newer") => {
      if (!win || loading) return;
      const end = win.start + win.messages.length;
      if (direction === "older" ? win.start === 0 : end >= win.total) return;
      setLoading(direction);
      const before = direction === "older" ? win.start : end + PAGE_SIZE;
      fetchChat(chatId, { before })
        .then((page) => {
          anchor.current = boxRef.current ? topRow(boxRef.current) : null;
          setWin((current) => (current ? grow(current, page.offset, page.messages.filter((m) => !m.live), page.total) : current));
        })
        .catch(() => setFailed(true))
        .finally(() => setLoading(null));
    },
    [chatId, win, loading],
  );

  /** Near an end of the window (or a window shorter than the screen): the next page there. */
  const onScroll = useCallback(() => {
    const box = boxRef.current;
    if (!box || !win || !placed.current) return;
    const end = win.start + win.messages.length;
    if (box.scrollTop <= LOAD_WITHIN_PX && win.start > 0) load("older");
    else if (box.scrollHeight - box.clientHeight - box.scrollTop <= LOAD_WITHIN_PX && end < win.total) load("newer");
  }, [win, load]);

  // A window that does not fill the screen never scrolls: look once it is laid out.
  useEffect(() => {
    const frame = requestAnimationFrame(onScroll);
    return () => cancelAnimationFrame(frame);
  }, [onScroll, loading]);

  const end = win ? win.start + win.messages.length : 0;
  const rows = useMemo(() => (win?.messages ?? []).map((message, i) => ({ key: `h${win ? win.start + i : i}`, message, live: false, idx: (win?.start ?? 0) + i })), [win]);
  const shown = versionRows(rows, versions, target.kind === "around" ? target.idx : null);
  return (
    <div className="chat-scroll chat-history" ref={boxRef} onScroll={onScroll} tabIndex={0} role="region" aria-label="Conversation history">
      <div className="chat-content">
        {win && win.start > 0 && (
          <div className="older" role="status">
            {loading === "older" ? "Loading earlier messages…" : `${win.start} earlier messages`}
          </div>
        )}
        {!win && !failed && (
          <div className="chat-loading" role="status" aria-label="Loading chat">
            <span className="skeleton" />
            <span className="skeleton skeleton-short" />
          </div>
        )}
        {failed && (
          <p className="send-error" role="alert">
            <Icon name="alert" size={16} />
            {offline ? "You're offline: these messages are not saved on this device." : "Couldn't load these messages."}
          </p>
        )}
        {shown.rows.map((row) => (
          <MessageRow
            key={row.key}
            rowKey={row.key}
            chatId={chatId}
            message={row.message}
            live={false}
            working={false}
            onAnswer={onAnswer}
            offline={offline}
            idx={row.idx}
            hit={target.kind === "around" && target.idx === row.idx}
            versions={shown.switches.get(row.key)}
            onVersion={chooseVersion}
          />
        ))}
        {win && end < win.total && (
          <div className="older" role="status">
            {loading === "newer" ? "Loading later messages…" : `${win.total - end} later messages`}
          </div>
        )}
      </div>
      <div className="chat-jump">
        <button type="button" className="btn btn-secondary btn-small" onClick={onLatest}>
          <Icon name="jump-latest" size={16} /> Jump to latest
        </button>
      </div>
    </div>
  );
}
