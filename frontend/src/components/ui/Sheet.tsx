//! A bottom sheet (a modal dialog): Escape or a tap on the scrim closes it. With a `title` it
//! has a head that stays at its top while it scrolls, with the title and Close.

import { useEffect, useRef, type ReactNode } from "react";

export function Sheet({ label, title, onClose, children }: { label: string; title?: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const close = useRef(onClose);
  useEffect(() => {
    close.current = onClose;
  });
  useEffect(() => {
    ref.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") close.current();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  return (
    <div className="sheet-layer">
      <button type="button" className="scrim" aria-label="Close" tabIndex={-1} onClick={onClose} />
      <div ref={ref} className="sheet" role="dialog" aria-modal="true" aria-label={label} tabIndex={-1}>
        {title !== undefined && (
          <div className="sheet-head">
            <h2 className="sheet-title">{title}</h2>
            <button type="button" className="btn btn-ghost sheet-close" onClick={onClose}>
              Close
            </button>
          </div>
        )}
        {children}
      </div>
    </div>
  );
}
