//! The message box: the text on a row of its own (the full width, whatever buttons show), the
//! tools and the primary buttons on the row below. Keeps its draft per chat across reloads,
//! grows up to a cap, sends with Enter on desktop (Shift+Enter for a newline; on touch-first
//! devices Enter is a newline).
//! While a turn runs Stop stays beside the primary button, which queues typed text, or steers
//! the queued messages in when the box is empty; Ctrl/Cmd+Enter steers typed text in at once.
//! Files come with the attach button (the camera too on phones), a paste or a drop; each
//! uploads at once with its progress and can be removed before sending. A message sent while
//! offline, or before its uploads finish, waits and goes when it can. The microphone dictates
//! into the box (never sends) where the browser can recognise speech.

import {
  useEffect,
  useId,
  useLayoutEffect,
  useRef,
  useState,
  type ClipboardEvent,
  type DragEvent,
  type KeyboardEvent,
  type ReactNode,
} from "react";
import type { Attachment } from "../../api/protocol.gen";
import { attachmentsOf, failed, pendingUploads } from "../../chat/attachments";
import { appendDictation } from "../../chat/dictation";
import { composerButtons, enterAction } from "../../chat/queue";
import { loadDraft, saveDraft } from "../../chat/persist";
import { slashMatches, type SlashCommand } from "../../chat/slash";
import { useAttachments } from "../../chat/useAttachments";
import { ComposerFiles, Dictate } from "./ComposerFiles";
import { Icon } from "../ui/Icon";

export interface ComposerProps {
  owner: string;
  chatId: string;
  running: boolean;
  questionOpen: boolean;
  offline: boolean;
  stopping: boolean;
  /** Queued messages the server holds (what Steer would send now). */
  queued?: number;
  /** A steer of the queued messages is on its way. */
  steering?: boolean;
  /** Sends the text and files; resolves false when it was not sent (they come back). */
  onSend: (text: string, attachments?: Attachment[]) => Promise<boolean>;
  /** Sends the text into the running turn; resolves false when it was not sent. */
  onSteer?: (text: string) => Promise<boolean>;
  /** Steers every queued message into the running turn, as one message. */
  onSteerQueued?: () => void;
  onStop: () => void;
  /** Called just before a send, while the DOM still shows the reader's position. */
  onBeforeSend?: () => void;
  /** Text handed back from elsewhere (a queued message that could not be steered); a new id adds it. */
  restore?: { id: number; text: string } | null;
  /** Shown beside the buttons (the model and effort picker). */
  accessory?: ReactNode;
  /** Shown above the box (a note such as a plan limit close by). */
  notice?: ReactNode;
  /** Something else must finish before a message can go (its placeholder says what). */
  waitingFor?: string | null;
}

const MAX_HEIGHT_PX = 220;

function touchPrimary(): boolean {
  return window.matchMedia?.("(pointer: coarse)").matches ?? false;
}

function modKeyName(): string {
  return /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent) ? "⌘" : "Ctrl";
}

export function Composer({
  owner,
  chatId,
  running,
  questionOpen,
  offline,
  stopping,
  queued = 0,
  steering = false,
  onSend,
  onSteer,
  onSteerQueued,
  onStop,
  onBeforeSend,
  restore,
  accessory,
  notice,
  waitingFor = null,
}: ComposerProps) {
  const [text, setText] = useState(() => loadDraft(owner, chatId));
  const [restoredId, setRestoredId] = useState(restore?.id ?? 0);
  const ref = useRef<HTMLTextAreaElement>(null);
  const hintId = useId();
  const files = useAttachments(owner, chatId, !offline);
  /** A send pressed while offline or before the uploads finished: it goes when it can. */
  const [waiting, setWaiting] = useState(false);
  const [fileNote, setFileNote] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  /** The slash menu's highlighted command, and the text it was closed on (Escape). */
  const [slashActive, setSlashActive] = useState(0);
  const [slashClosedOn, setSlashClosedOn] = useState<string | null>(null);

  if (restore && restore.id !== restoredId) {
    setRestoredId(restore.id);
    setText((current) => (current.trim() === "" ? restore.text : `${current}\n\n${restore.text}`));
  }

  useEffect(() => saveDraft(owner, chatId, text), [owner, chatId, text]);

  useLayoutEffect(() => {
    const area = ref.current;
    if (!area) return;
    area.style.height = "auto";
    area.style.height = `${Math.min(area.scrollHeight, MAX_HEIGHT_PX)}px`;
  }, [text]);

  const hasText = text.trim() !== "";
  const hasFiles = files.items.length > 0;
  const uploadsPending = pendingUploads(files.items);
  const canSend = (hasText || hasFiles) && !questionOpen && waitingFor === null;
  const computed = composerButtons({ running, questionOpen, hasText: (hasText || hasFiles) && waitingFor === null, queued, offline, stopping, steering });
  // Sending offline is allowed: the message waits for the connection.
  const buttons =
    offline && computed.primary && computed.primary.kind !== "steer" && canSend
      ? { ...computed, primary: { ...computed.primary, disabled: false } }
      : computed;

  async function submit(steer: boolean) {
    if (!canSend) return;
    if (failed(files.items)) {
      setFileNote("Remove the file that could not be uploaded (or try it again) first.");
      return;
    }
    if (offline || uploadsPending) {
      setWaiting(true);
      return;
    }
    setWaiting(false);
    setFileNote(null);
    const sent = text;
    const attachments = attachmentsOf(files.items);
    if (!steer || attachments.length > 0) onBeforeSend?.();
    setText("");
    // Files go with a turn of their own: a steer carries words only.
    const ok =
      attachments.length > 0 ? await onSend(sent, attachments) : steer && onSteer ? await onSteer(sent) : await onSend(sent);
    // Never lose what was typed: a failed send puts the text back (unless new text was typed).
    if (!ok) setText((current) => (current === "" ? sent : current));
    else if (attachments.length > 0) files.clear();
  }

  // A waiting message goes once the device is online and its uploads are done (a refused file
  // or an emptied box ends the wait).
  const waitingNow = waiting && canSend && !failed(files.items);
  const submitRef = useRef(submit);
  useEffect(() => {
    submitRef.current = submit;
  });
  useEffect(() => {
    if (waitingNow && !offline && !uploadsPending) void submitRef.current(false);
  }, [waitingNow, offline, uploadsPending]);

  function addFiles(picked: readonly File[]) {
    if (picked.length === 0) return;
    setFileNote(files.add(picked));
  }

  function onPaste(event: ClipboardEvent<HTMLTextAreaElement>) {
    const pasted = Array.from(event.clipboardData?.files ?? []);
    if (pasted.length === 0) return;
    event.preventDefault();
    addFiles(pasted);
  }

  const hasDraggedFiles = (event: DragEvent) => Array.from(event.dataTransfer?.types ?? []).includes("Files");

  const slash = slashClosedOn === text ? [] : slashMatches(text);
  const active = Math.min(slashActive, Math.max(0, slash.length - 1));

  function pickSlash(command: SlashCommand) {
    setText(command.insert);
    setSlashActive(0);
    ref.current?.focus();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (slash.length > 0 && !event.nativeEvent.isComposing) {
      const move = event.key === "ArrowDown" ? 1 : event.key === "ArrowUp" ? -1 : 0;
      if (move !== 0) {
        event.preventDefault();
        setSlashActive((active + move + slash.length) % slash.length);
        return;
      }
      const picked = slash[active];
      if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && picked) {
        event.preventDefault();
        pickSlash(picked);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        setSlashClosedOn(text);
        return;
      }
    }
    if (event.key !== "Enter" || event.nativeEvent.isComposing) return;
    const action = enterAction({ shift: event.shiftKey, mod: event.metaKey || event.ctrlKey }, { touch: touchPrimary(), running, questionOpen });
    if (action === "newline") return;
    event.preventDefault();
    void submit(action === "steer" && onSteer !== undefined);
  }

  const mod = modKeyName();
  const placeholder = waitingFor
    ? waitingFor
    : offline
    ? "Offline — you can keep typing"
    : questionOpen
      ? "Answer the question above first"
      : running
        ? touchPrimary() || !onSteer
          ? "Queue a message"
          : `Queue a message · ${mod}+Enter sends it now`
        : "Message Möbius";
  const primary = buttons.primary;
  return (
    <form
      className="composer"
      data-dragging={dragging || undefined}
      onSubmit={(event) => {
        event.preventDefault();
        void submit(false);
      }}
      onDragOver={(event) => {
        if (!hasDraggedFiles(event)) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        setDragging(false);
        if (!hasDraggedFiles(event)) return;
        event.preventDefault();
        addFiles(Array.from(event.dataTransfer.files));
      }}
    >
      {notice}
      {(waitingNow || fileNote) && (
        <p className="composer-note" role="status">
          {waitingNow ? (offline ? "Waiting for the connection: the message goes when you're back online." : "Sending when the uploads finish…") : fileNote}
          {waitingNow && (
            <button type="button" className="link-button" onClick={() => setWaiting(false)}>
              Cancel
            </button>
          )}
        </p>
      )}
      {slash.length > 0 && (
        <ul className="slash-menu" id={`${hintId}-slash`} role="listbox" aria-label="Commands">
          {slash.map((command, i) => (
            <li
              key={command.name}
              id={`${hintId}-slash-${i}`}
              role="option"
              aria-selected={i === active}
              className="slash-option"
              // Keep the focus in the box: a tap picks without closing the keyboard.
              onMouseDown={(event) => event.preventDefault()}
              onClick={() => pickSlash(command)}
            >
              <span className="slash-name">{command.name}</span>
              <span className="slash-hint">{command.hint}</span>
            </li>
          ))}
        </ul>
      )}
      <div className="composer-box" data-disabled={offline || undefined}>
        <ComposerFiles items={files.items} onRemove={files.remove} onRetry={files.retry} />
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
          aria-controls={slash.length > 0 ? `${hintId}-slash` : undefined}
          aria-activedescendant={slash.length > 0 ? `${hintId}-slash-${active}` : undefined}
          onKeyDown={onKeyDown}
          onPaste={onPaste}
          enterKeyHint={touchPrimary() ? "enter" : "send"}
          autoComplete="off"
          aria-keyshortcuts={running && onSteer ? "Control+Enter Meta+Enter" : undefined}
        />
        <div className="composer-actions">
          <div className="composer-tools">
            {accessory}
            <ComposerFiles.Attach onFiles={addFiles} touch={touchPrimary()} disabled={questionOpen} />
            <Dictate onText={(words) => setText((current) => appendDictation(current, words))} />
          </div>
          <div className="composer-primary">
            {buttons.stop && (
              <button
                type="button"
                className="composer-button composer-stop"
                onClick={onStop}
                disabled={buttons.stop.disabled}
                aria-label={stopping ? "Stopping" : "Stop"}
                title="Stop"
              >
                <Icon name="stop" size={16} />
              </button>
            )}
            {primary?.kind === "steer" && (
              <button
                type="button"
                className="composer-steer"
                onClick={onSteerQueued}
                disabled={primary.disabled || !onSteerQueued}
                title="Send the queued messages into the running turn now"
              >
                <Icon name="send" size={16} />
                Steer
              </button>
            )}
            {(primary?.kind === "send" || primary?.kind === "queue") && (
              <button
                type="submit"
                className="composer-button composer-send"
                disabled={primary.disabled}
                aria-label={primary.kind === "queue" ? "Queue message" : "Send"}
                title={primary.kind === "queue" ? (onSteer ? `Queue (${mod}+Enter sends it now)` : "Queue") : "Send"}
              >
                <Icon name="send" size={18} />
              </button>
            )}
          </div>
        </div>
      </div>
    </form>
  );
}
