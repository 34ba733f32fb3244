//! A list that renders only the rows near the visible part of its scrolling ancestor, with
//! spacers standing in for the rest. Rows may have any height: each rendered row is measured
//! (and re-measured when the list resizes), rows never rendered count as `estimate` pixels.
//! The list can sit anywhere inside the scroller, below other content.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";

export interface VirtualListProps<T> {
  items: readonly T[];
  itemKey: (item: T) => string;
  /** Renders one row: a single element (an `<li>` in a `<ul>`), in item order. */
  renderItem: (item: T) => ReactNode;
  /** Height assumed for a row not measured yet, in pixels. */
  estimate: number;
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

/** The rows `[start, end)` to render to cover `[top, bottom]` of the list. */
export function visibleRange(heights: readonly number[], top: number, bottom: number): { start: number; end: number; ends: number[] } {
  const ends: number[] = [];
  let y = 0;
  for (const h of heights) {
    y += h;
    ends.push(y);
  }
  const start = Math.min(firstEndingAfter(ends, top), heights.length);
  const end = Math.max(start, Math.min(heights.length, firstEndingAfter(ends, bottom) + 1));
  return { start, end, ends };
}

export function VirtualList<T>({ items, itemKey, renderItem, estimate, scroller, overscanPx = DEFAULT_OVERSCAN_PX, className, footer }: VirtualListProps<T>) {
  const listRef = useRef<HTMLUListElement>(null);
  const [measured, setMeasured] = useState<ReadonlyMap<string, number>>(() => new Map());
  // Bumped when the list resizes: every rendered row is measured again.
  const [resizes, setResizes] = useState(0);
  // The visible part of the scroller, in the list's own coordinates.
  const [view, setView] = useState({ top: 0, bottom: 2 * DEFAULT_OVERSCAN_PX });

  const readView = useCallback(() => {
    const box = scroller;
    const list = listRef.current;
    if (!box || !list) return;
    const listTop = list.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    const top = Math.max(0, box.scrollTop - listTop - overscanPx);
    const bottom = box.scrollTop - listTop + box.clientHeight + overscanPx;
    setView((v) => (Math.abs(v.top - top) < 1 && Math.abs(v.bottom - bottom) < 1 ? v : { top, bottom }));
  }, [scroller, overscanPx]);

  useEffect(() => {
    const box = scroller;
    if (!box) return;
    readView();
    box.addEventListener("scroll", readView, { passive: true });
    const observer = new ResizeObserver(() => {
      readView();
      setResizes((n) => n + 1);
    });
    observer.observe(box);
    if (listRef.current) observer.observe(listRef.current);
    return () => {
      box.removeEventListener("scroll", readView);
      observer.disconnect();
    };
  }, [scroller, readView]);

  const heights = useMemo(() => items.map((item) => measured.get(itemKey(item)) ?? estimate), [items, itemKey, estimate, measured]);
  const { start, end, ends } = visibleRange(heights, view.top, view.bottom);
  const shown = items.slice(start, end);
  const before = start > 0 ? (ends[start - 1] ?? 0) : 0;
  const after = (ends[ends.length - 1] ?? 0) - (end > 0 ? (ends[end - 1] ?? 0) : 0);

  // Measure the rows just rendered; a change re-renders with the true heights.
  useLayoutEffect(() => {
    const list = listRef.current;
    if (!list) return;
    const found: [string, number][] = [];
    shown.forEach((item, i) => {
      const el = list.children[i + 1] as HTMLElement | undefined;
      const h = el?.getBoundingClientRect().height ?? 0;
      const key = itemKey(item);
      if (h > 0 && Math.abs((measured.get(key) ?? -1) - h) >= 0.5) found.push([key, h]);
    });
    if (found.length > 0) setMeasured((old) => new Map([...old, ...found]));
  }, [shown, itemKey, measured, resizes]);

  return (
    <ul ref={listRef} className={className}>
      <li aria-hidden="true" className="virtual-spacer" style={{ height: before }} />
      {shown.map((item) => renderItem(item))}
      <li aria-hidden="true" className="virtual-spacer" style={{ height: after }} />
      {footer}
    </ul>
  );
}
