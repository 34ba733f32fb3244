//! A list that renders only the rows near the visible part of its scrolling ancestor, with
//! spacers standing in for the rest. Rows may have any height: each rendered row is measured
//! (and re-measured when the list resizes), rows never rendered count as `estimate` pixels.
//! The list can sit anywhere inside the scroller, below other content. A scroll renders again
//! only once the screen comes within half the overscan of the rows rendered (a few rows at a
//! time, not one every frame), and a row measured at the height it was assumed to have changes
//! nothing: scrolling a long list costs the rows that come into range.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";

export interface VirtualListProps<T> {
  items: readonly T[];
  itemKey: (item: T) => string;
  /** Renders one row: a single element (an `<li>` in a `<ul>`), in item order. */
  renderItem: (item: T) => ReactNode;
  /** Height assumed for a row not measured yet, in pixels (the same for every row, or by row). */
  estimate: number | ((item: T) => number);
  /** The scrolling ancestor (null until it is mounted). */
  scroller: HTMLElement | null;
  /** Rendered beyond each edge of the visible part, in pixels. */
  overscanPx?: number;
  className?: string;
  /** Extra rows after the items (an empty note, a loading row), always rendered. */
  footer?: ReactNode;
}

const DEFAULT_OVERSCAN_PX = 600;

/** The first index whose row ends below `y` (`ends` ascending). */
function firstEndingAfter(ends: readonly number[], y: number): number {
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((ends[mid] ?? 0) > y) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Where each row ends, from the rows' heights. */
function endsOf(heights: readonly number[]): number[] {
  const ends: number[] = [];
  let y = 0;
  for (const h of heights) {
    y += h;
    ends.push(y);
  }
  return ends;
}

/** The rows `[start, end)` that cover `[top, bottom]` of a list whose rows end at `ends`. */
function rangeOf(ends: readonly number[], top: number, bottom: number): { start: number; end: number } {
  const start = Math.min(firstEndingAfter(ends, top), ends.length);
  const end = Math.max(start, Math.min(ends.length, firstEndingAfter(ends, bottom) + 1));
  return { start, end };
}

/** The rows `[start, end)` to render to cover `[top, bottom]` of the list. */
export function visibleRange(heights: readonly number[], top: number, bottom: number): { start: number; end: number; ends: number[] } {
  const ends = endsOf(heights);
  return { ...rangeOf(ends, top, bottom), ends };
}

/** The nearest ancestor of `el` that scrolls vertically (the document's scroller if none). */
export function scrollParentOf(el: HTMLElement | null): HTMLElement | null {
  for (let node = el?.parentElement ?? null; node; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowY;
    if (overflow === "auto" || overflow === "scroll") return node;
  }
  return el ? (document.scrollingElement as HTMLElement | null) : null;
}

export function VirtualList<T>({ items, itemKey, renderItem, estimate, scroller, overscanPx = DEFAULT_OVERSCAN_PX, className, footer }: VirtualListProps<T>) {
  const listRef = useRef<HTMLUListElement>(null);
  const [measured, setMeasured] = useState<ReadonlyMap<string, number>>(() => new Map());
  // Bumped when the list resizes: every rendered row is measured again.
  const [resizes, setResizes] = useState(0);
  // The visible part of the scroller, in the list's own coordinates, as of the last change of
  // the rows in range.
  const [view, setView] = useState({ top: 0, bottom: 2 * DEFAULT_OVERSCAN_PX });
  const heights = useMemo(
    () => items.map((item) => measured.get(itemKey(item)) ?? (typeof estimate === "number" ? estimate : estimate(item))),
    [items, itemKey, estimate, measured],
  );
  const ends = useMemo(() => endsOf(heights), [heights]);
  const endsRef = useRef(ends);
  useLayoutEffect(() => {
    endsRef.current = ends;
  }, [ends]);

  const readView = useCallback(() => {
    const box = scroller;
    const list = listRef.current;
    if (!box || !list) return;
    const listTop = list.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    const top = Math.max(0, box.scrollTop - listTop - overscanPx);
    const bottom = box.scrollTop - listTop + box.clientHeight + overscanPx;
    // The rows rendered change only once the screen comes within half the overscan of their
    // edge: a scroll renders again every half overscan, not every row.
    setView((v) => {
      if (Math.abs(v.top - top) < 1 && Math.abs(v.bottom - bottom) < 1) return v;
      const was = rangeOf(endsRef.current, v.top, v.bottom);
      const near = rangeOf(endsRef.current, top === 0 ? 0 : top + overscanPx / 2, bottom - overscanPx / 2);
      return near.start >= was.start && near.end <= was.end ? v : { top, bottom };
    });
  }, [scroller, overscanPx]);

  useEffect(() => {
    const box = scroller;
    if (!box) return;
    readView();
    box.addEventListener("scroll", readView, { passive: true });
    // Focus moving through the rows (Tab held down) scrolls at once but says so a frame later;
    // read on the focus itself (a discrete event: React renders before the task ends), the rows
    // follow it before the next key, so it never runs past the last one rendered.
    const list = listRef.current;
    list?.addEventListener("focusin", readView);
    const observer = new ResizeObserver(() => {
      readView();
      setResizes((n) => n + 1);
    });
    observer.observe(box);
    if (list) observer.observe(list);
    return () => {
      box.removeEventListener("scroll", readView);
      list?.removeEventListener("focusin", readView);
      observer.disconnect();
    };
  }, [scroller, readView]);

  const { start, end } = rangeOf(ends, view.top, view.bottom);
  const shown = items.slice(start, end);
  const before = start > 0 ? (ends[start - 1] ?? 0) : 0;
  const after = (ends[ends.length - 1] ?? 0) - (end > 0 ? (ends[end - 1] ?? 0) : 0);

  // Measure the rows just rendered; a height other than the one assumed re-renders with it.
  useLayoutEffect(() => {
    const list = listRef.current;
    if (!list) return;
    const found: [string, number][] = [];
    shown.forEach((item, i) => {
      const el = list.children[i + 1] as HTMLElement | undefined;
      const h = el?.getBoundingClientRect().height ?? 0;
      if (h > 0 && Math.abs((heights[start + i] ?? -1) - h) >= 0.5) found.push([itemKey(item), h]);
    });
    if (found.length > 0) setMeasured((old) => new Map([...old, ...found]));
  }, [shown, start, heights, itemKey, resizes]);

  return (
    <ul ref={listRef} className={className}>
      <li aria-hidden="true" className="virtual-spacer" style={{ height: before }} />
      {shown.map((item) => renderItem(item))}
      <li aria-hidden="true" className="virtual-spacer" style={{ height: after }} />
      {footer}
    </ul>
  );
}
