//! Scroll rules as pure predicates: when the view follows the reply, when a send pins its
//! message to the top, how big the bottom spacer is, and how a reading position is saved
//! and restored. The view measures; these decide.

/** The scroll box's metrics. */
export interface ScrollMetrics {
  scrollTop: number;
  scrollHeight: number;
  clientHeight: number;
}

/** Exactly two behaviours: follow the tail, or hold (a pinned send is a kind of hold). */
export type ScrollMode = { kind: "follow" } | { kind: "hold" } | { kind: "pin"; key: string };

/** Within this many pixels of the physical bottom counts as "at the bottom". */
export const AT_BOTTOM_PX = 32;

/** Distance to the physical bottom (the spacer counts as distance). */
export function distanceToBottom(m: ScrollMetrics): number {
  return Math.max(0, m.scrollHeight - m.clientHeight - m.scrollTop);
}

export function isAtBottom(m: ScrollMetrics, tolerance: number = AT_BOTTOM_PX): boolean {
  return distanceToBottom(m) <= tolerance;
}

/**
 * The mode after the owner sends a message (`key` = its row): it pins, wherever the reader was,
 * so the message they just sent is on screen with the reply growing under it (a reader who had
 * scrolled up would otherwise send into the dark).
 */
export function modeAfterSend(key: string): ScrollMode {
  return { kind: "pin", key };
}

/** Farther than this from the newest content (the reserved spacer aside) offers "Jump to latest". */
export const AWAY_PX = 240;

/** The reader is away from the newest content: more than [`AWAY_PX`] above it, not counting the
 *  room a pin reserves below it. */
export function isAway(m: ScrollMetrics, spacer: number): boolean {
  return distanceToBottom(m) - Math.max(0, spacer) > AWAY_PX;
}

/**
 * The mode after the reader scrolled by hand and the scroll settled. Reaching the physical
 * bottom with no reserved room left enters follow; anything else holds. Scrolling back into a
 * pin's spacer keeps the pin.
 */
export function modeAfterReaderScroll(mode: ScrollMode, m: ScrollMetrics, spacer: number): ScrollMode {
  const atBottom = isAtBottom(m);
  if (mode.kind === "pin") return atBottom ? mode : { kind: "hold" };
  if (atBottom && spacer <= 0) return { kind: "follow" };
  return { kind: "hold" };
}

/**
 * The bottom spacer that lets the pinned row reach the top of the box: the box height minus
 * the content from the pinned row's top to the end (never negative).
 */
export function spacerFor(clientHeight: number, pinnedRowTop: number, contentEnd: number, topInset = 0): number {
  return Math.max(0, Math.ceil(clientHeight - topInset - (contentEnd - pinnedRowTop)));
}

/** A pin whose reserved room is used up hands over to follow. */
export function modeAfterGrowth(mode: ScrollMode, spacer: number): ScrollMode {
  return mode.kind === "pin" && spacer <= 0 ? { kind: "follow" } : mode;
}

/** A saved reading position: the first row visible at the top, and how far into it. */
export interface Anchor {
  key: string;
  offset: number;
}

/** The row under the top edge of the box. Rows are in order with tops relative to the content. */
export function anchorAt(rows: readonly { key: string; top: number; bottom: number }[], scrollTop: number): Anchor | null {
  for (const row of rows) {
    if (row.bottom > scrollTop) return { key: row.key, offset: Math.round(scrollTop - row.top) };
  }
  const last = rows[rows.length - 1];
  return last ? { key: last.key, offset: Math.round(scrollTop - last.top) } : null;
}

/** Where to scroll to put `anchor` back where it was, given its row's top now. */
export function scrollTopFor(anchor: Anchor, rowTop: number, m: Pick<ScrollMetrics, "scrollHeight" | "clientHeight">): number {
  const max = Math.max(0, m.scrollHeight - m.clientHeight);
  return Math.min(max, Math.max(0, rowTop + anchor.offset));
}

/** Older pages load once the reader is this close to the top. */
export const LOAD_OLDER_WITHIN_PX = 480;

export function shouldLoadOlder(m: ScrollMetrics, hasMore: boolean, loading: boolean): boolean {
  return hasMore && !loading && m.scrollTop <= LOAD_OLDER_WITHIN_PX;
}
