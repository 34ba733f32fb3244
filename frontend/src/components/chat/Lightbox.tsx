//! The full-screen image viewer: one image at a time, zoom (double tap, the button, the wheel),
//! swipe or arrow keys between the images it was opened with, download, Escape closes.

import { useEffect, useRef, useState, type PointerEvent as ReactPointerEvent } from "react";
import { closeLightbox, stepLightbox, useLightbox } from "../../chat/lightbox";
import { Icon } from "../ui/Icon";

/** A horizontal swipe longer than this changes the image. */
const SWIPE_PX = 50;
const ZOOMED = 2.5;

export function LightboxHost() {
  const state = useLightbox();
  if (!state) return null;
  const image = state.images[state.index];
  if (!image) return null;
  return <Lightbox key={`${state.index}:${image.src}`} image={image} index={state.index} count={state.images.length} />;
}

function Lightbox({ image, index, count }: { image: { src: string; alt: string; name: string }; index: number; count: number }) {
  const [zoom, setZoom] = useState(1);
  const [offset, setOffset] = useState({ x: 0, y: 0 });
  const start = useRef<{ x: number; y: number; ox: number; oy: number } | null>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const opener = useRef<Element | null>(document.activeElement);

  useEffect(() => {
    closeRef.current?.focus();
    const returnTo = opener.current;
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") closeLightbox();
      else if (event.key === "ArrowRight") stepLightbox(1);
      else if (event.key === "ArrowLeft") stepLightbox(-1);
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      if (returnTo instanceof HTMLElement) returnTo.focus();
    };
  }, []);

  const toggleZoom = () => {
    setZoom((z) => (z > 1 ? 1 : ZOOMED));
    setOffset({ x: 0, y: 0 });
  };

  const onPointerDown = (event: ReactPointerEvent) => {
    start.current = { x: event.clientX, y: event.clientY, ox: offset.x, oy: offset.y };
  };
  const onPointerMove = (event: ReactPointerEvent) => {
    if (!start.current || zoom === 1) return;
    setOffset({ x: start.current.ox + event.clientX - start.current.x, y: start.current.oy + event.clientY - start.current.y });
  };
  const onPointerUp = (event: ReactPointerEvent) => {
    const from = start.current;
    start.current = null;
    if (!from || zoom !== 1) return;
    const dx = event.clientX - from.x;
    if (Math.abs(dx) > SWIPE_PX && Math.abs(dx) > Math.abs(event.clientY - from.y)) stepLightbox(dx < 0 ? 1 : -1);
  };

  return (
    <div className="lightbox" role="dialog" aria-modal="true" aria-label={`Image ${index + 1} of ${count}: ${image.alt}`}>
      <div className="lightbox-bar">
        <span className="lightbox-count">
          {index + 1} / {count}
        </span>
        <span className="lightbox-name">{image.name}</span>
        <button type="button" className="lightbox-button" onClick={toggleZoom} aria-pressed={zoom > 1} aria-label={zoom > 1 ? "Zoom out" : "Zoom in"}>
          <Icon name={zoom > 1 ? "zoom-out" : "zoom-in"} size={20} />
        </button>
        <a className="lightbox-button" href={image.src} download={image.name} aria-label={`Download ${image.name}`}>
          <Icon name="download" size={20} />
        </a>
        <button type="button" className="lightbox-button" ref={closeRef} onClick={closeLightbox} aria-label="Close">
          <Icon name="close" size={20} />
        </button>
      </div>
      <div
        className="lightbox-stage"
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onPointerCancel={() => (start.current = null)}
        onDoubleClick={toggleZoom}
        onWheel={(event) => setZoom((z) => Math.max(1, Math.min(5, z * (event.deltaY < 0 ? 1.2 : 1 / 1.2))))}
      >
        <img
          className="lightbox-image"
          src={image.src}
          alt={image.alt}
          draggable={false}
          style={{ transform: `translate(${offset.x}px, ${offset.y}px) scale(${zoom})` }}
        />
      </div>
      {count > 1 && (
        <>
          <button type="button" className="lightbox-nav lightbox-prev" onClick={() => stepLightbox(-1)} disabled={index === 0} aria-label="Previous image">
            <Icon name="chevron" size={22} />
          </button>
          <button type="button" className="lightbox-nav lightbox-next" onClick={() => stepLightbox(1)} disabled={index === count - 1} aria-label="Next image">
            <Icon name="chevron" size={22} />
          </button>
        </>
      )}
    </div>
  );
}
