//! The message box: keeps its draft per chat across reloads, grows up to a cap, sends with
//! Enter on desktop (Shift+Enter for a newline; on touch-first devices Enter is a newline),
//! and turns into Stop while a turn runs.

import { useEffect, useId, useLayoutEffect, useRef, useState, type KeyboardEvent } from "react";
import { loadDraft, saveDraft } from "../chat/persist";
import { Icon } from "./Icon";

export interface ComposerProps {
  owner: string;
  chatId: string;
  running: boolean;
  questionOpen: boolean;
  offline: boolean;
  stopping: boolean;
  /** Sends the text; resolves false when it was not sent (the text comes back). */
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
  /** Called just before a send, while the DOM still shows the reader's position. */
  onBeforeSend?: () => void;
}

const MAX_HEIGHT_PX = 220;

function touchPrimary(): boolean {
  return window.matchMedia?.("(pointer: coarse)").matches ?? false;
}

export function Composer({ owner, chatId, running, questionOpen, offline, stopping, onSend, onStop, onBeforeSend }: ComposerProps) {
  const [text, setText] = useState(() => loadDraft(owner, chatId));
  const ref = useRef<HTMLTextAreaElement>(null);
  const hintId = useId();

  useEffect(() => saveDraft(owner, chatId, text), [owner, chatId, text]);

  useLayoutEffect(() => {
    const area = ref.current;
    if (!area) return;
    area.style.height = "auto";
    area.style.height = `${Math.min(area.scrollHeight, MAX_HEIGHT_PX)}px`;
  }, [text]);

  const hasText = text.trim() !== "";
  const canSend = hasText && !offline && !questionOpen;

  async function submit() {
    if (!canSend) return;
    const sent = text;
    onBeforeSend?.();
    setText("");
    const ok = await onSend(sent);
    // Never lose what was typed: a failed send puts the text back (unless new text was typed).
    if (!ok) setText((current) => (current === "" ? sent : current));
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key !== "Enter" || event.nativeEvent.isComposing) return;
    const force = event.metaKey || event.ctrlKey;
    if (force || (!event.shiftKey && !touchPrimary())) {
      event.preventDefault();
      void submit();
    }
  }

  const placeholder = offline ? "Offline — you can keep typing" : questionOpen ? "Answer the question above first" : running ? "Queue a message" : "Message Möbius";
  return (
    <form
      className="composer"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <div className="composer-box" data-disabled={offline || undefined}>
        <label className="visually-hidden" htmlFor={`${hintId}-input`}>
          Message
        </label>
        <textarea
          id={`${hintId}-input`}
          ref={ref}
          className="composer-input"
          rows={1}
          value={text}
          placeholder={placeholder}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          enterKeyHint={touchPrimary() ? "enter" : "send"}
          autoComplete="off"
        />
        <div className="composer-actions">
          {(running || questionOpen) && (
            <button
              type="button"
              className="composer-button composer-stop"
              onClick={onStop}
              disabled={stopping || offline}
              aria-label={stopping ? "Stopping" : "Stop"}
              title="Stop"
            >
              <Icon name="stop" size={16} />
            </button>
          )}
          {(hasText || !(running || questionOpen)) && (
            <button type="submit" className="composer-button composer-send" disabled={!canSend} aria-label={running ? "Queue message" : "Send"} title={running ? "Queue" : "Send"}>
              <Icon name="send" size={18} />
            </button>
          )}
        </div>
      </div>
    </form>
  );
}
