//! The composer's attachments row (a chip per file: thumbnail or type, name, size, upload
//! progress, remove), its attach and camera buttons, and the dictation button.

import { useEffect, useRef, useState } from "react";
import type { Staged } from "../../chat/attachments";
import { speechRecognition, type Recognizer } from "../../chat/dictation";
import { formatSize } from "../../chat/media";
import { Icon } from "../ui/Icon";


export function ComposerFiles({ items, onRemove, onRetry }: { items: Staged[]; onRemove: (id: string) => void; onRetry: (id: string) => void }) {
  if (items.length === 0) return null;
  return (
    <ul className="composer-files" aria-label="Attached files">
      {items.map((item) => (
        <li key={item.id} className="composer-file" data-status={item.status}>
          {item.previewUrl ? (
            <img className="composer-file-thumb" src={item.previewUrl} alt="" />
          ) : (
            <span className="composer-file-thumb composer-file-icon" aria-hidden="true">
              <Icon name="file" size={18} />
            </span>
          )}
          <span className="composer-file-text">
            <span className="composer-file-name">{item.name}</span>
            <span className="composer-file-meta">
              {item.status === "error" ? item.error : item.status === "waiting" ? `${formatSize(item.size)} · waiting` : formatSize(item.size)}
            </span>
            {(item.status === "uploading" || item.status === "waiting") && (
              <span
                className="composer-file-progress"
                role="progressbar"
                aria-label={`Uploading ${item.name}`}
                aria-valuemin={0}
                aria-valuemax={100}
                aria-valuenow={Math.round(item.progress * 100)}
              >
                <span style={{ width: `${Math.round(item.progress * 100)}%` }} />
              </span>
            )}
          </span>
          {item.status === "error" && !item.resumable && (
            <button type="button" className="composer-file-action" onClick={() => onRetry(item.id)} aria-label={`Try ${item.name} again`}>
              <Icon name="refresh" size={16} />
            </button>
          )}
          <button type="button" className="composer-file-action" onClick={() => onRemove(item.id)} aria-label={`Remove ${item.name}`}>
            <Icon name="close" size={16} />
          </button>
        </li>
      ))}
    </ul>
  );
}

/** The attach button (any file; on phones the picker also offers the camera) and, on touch
 *  devices, a camera button that opens it directly. */
function Attach({ onFiles, touch, disabled }: { onFiles: (files: File[]) => void; touch: boolean; disabled: boolean }) {
  const picker = useRef<HTMLInputElement>(null);
  const camera = useRef<HTMLInputElement>(null);
  const take = (input: HTMLInputElement | null) => {
    if (!input?.files) return;
    onFiles(Array.from(input.files));
    input.value = "";
  };
  return (
    <>
      <input ref={picker} type="file" multiple hidden data-testid="attach-input" onChange={(e) => take(e.currentTarget)} />
      <button type="button" className="composer-button composer-tool" onClick={() => picker.current?.click()} disabled={disabled} aria-label="Attach files" title="Attach files">
        <Icon name="paperclip" size={18} />
      </button>
      {touch && (
        <>
          <input ref={camera} type="file" accept="image/*" capture="environment" hidden onChange={(e) => take(e.currentTarget)} />
          <button type="button" className="composer-button composer-tool" onClick={() => camera.current?.click()} disabled={disabled} aria-label="Take a photo" title="Take a photo">
            <Icon name="camera" size={18} />
          </button>
        </>
      )}
    </>
  );
}

ComposerFiles.Attach = Attach;

/** Dictation into the box; absent where the browser cannot recognise speech. */
export function Dictate({ onText }: { onText: (words: string) => void }) {
  const [listening, setListening] = useState(false);
  const recognizer = useRef<Recognizer | null>(null);
  const [Recognition] = useState(() => speechRecognition());
  useEffect(() => () => recognizer.current?.stop(), []);
  if (!Recognition) return null;

  const toggle = () => {
    if (listening) {
      recognizer.current?.stop();
      return;
    }
    const r = new Recognition();
    r.lang = navigator.language || "en-US";
    r.continuous = true;
    r.interimResults = false;
    r.onresult = (event) => {
      for (let i = event.resultIndex; i < event.results.length; i++) {
        const result = event.results[i];
        if (result?.isFinal) onText(result[0].transcript);
      }
    };
    r.onend = () => {
      setListening(false);
      recognizer.current = null;
    };
    r.onerror = () => setListening(false);
    recognizer.current = r;
    try {
      r.start();
      setListening(true);
    } catch {
      setListening(false);
    }
  };

  return (
    <button
      type="button"
      className="composer-button composer-tool"
      data-listening={listening || undefined}
      onClick={toggle}
      aria-pressed={listening}
      aria-label={listening ? "Stop dictation" : "Dictate"}
      title={listening ? "Stop dictation" : "Dictate (the words land here for you to review)"}
    >
      <Icon name="mic" size={18} />
    </button>
  );
}
