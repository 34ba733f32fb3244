//! A question the agent asked (options, multi-select, free-text "Other") or a tool approval
//! (Allow once / Allow for this chat / Deny with a reason). A card with one single-choice
//! question answers on one tap (its options are buttons; the tapped one shows it is being sent,
//! then the card turns into the answered summary — no undo: the agent acts on it at once).
//! Otherwise the choices are made first and "Send answer" sends them. A failure keeps the
//! choices so the owner can try again. A secure-input card takes a secret the agent asked for:
//! the value goes to its own route, is stored sealed as the app's secret, and is never shown
//! again (the card only says stored or declined).

import { useId, useState, type FormEvent } from "react";
import type { ApprovalAnswers, ApprovalBlock, PlanApprovalBlock, QuestionAnswers, QuestionBlock, SecureInputBlock } from "../../api/types";
import { ApiError, apiFetch } from "../../api/client";
import { Icon } from "../ui/Icon";
import { Markdown } from "./Markdown";

export interface QuestionCardProps {
  block: QuestionBlock | ApprovalBlock | PlanApprovalBlock | SecureInputBlock;
  onAnswer: (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => Promise<void>;
  disabled: boolean;
  /** The chat the card is in (a secure-input card answers through its own route). */
  chatId?: string;
  /** The card's message is the running turn's (a secure-input card waits only then). */
  live?: boolean;
}

function failureText(error: unknown): string {
  if (error instanceof ApiError && error.code === "question_stale") return "This question is no longer open.";
  if (error instanceof ApiError && error.isNetwork) return "Couldn't send — check your connection and try again.";
  return error instanceof Error ? error.message : "Couldn't send your answer.";
}

export function QuestionCard(props: QuestionCardProps) {
  if (props.block.kind === "plan") return <PlanApprovalCard {...props} block={props.block} />;
  if (props.block.kind === "secure_input") return <SecureInputCard {...props} block={props.block} />;
  return props.block.kind === "approval" ? <ApprovalCard {...props} block={props.block} /> : <AskCard {...props} block={props.block} />;
}

/** Longest secret the server keeps, in bytes. */
const MAX_SECRET_BYTES = 8192;

function SecureInputCard({ block, disabled, chatId, live }: QuestionCardProps & { block: SecureInputBlock }) {
  const inputId = useId();
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<"stored" | "declined" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const outcome = block.answers?.secret ?? done;

  if (outcome || !live) {
    const text = outcome === "stored" ? "Saved" : outcome === "declined" ? "Declined" : "No longer waiting";
    return (
      <section className="qcard qcard-answered" aria-label="Secret request">
        <div className="qcard-summary">
          <span className="qcard-q">
            Secret <code>{block.name}</code> for {block.target_name}
          </span>
          <span className="qcard-a" data-secret={outcome ?? "expired"}>
            <Icon name={outcome === "stored" ? "check" : "close"} size={14} /> {text}
          </span>
        </div>
      </section>
    );
  }

  async function send(action: "submit" | "decline") {
    if (!chatId || busy) return;
    setBusy(true);
    setError(null);
    const path = `/api/secure-inputs/${encodeURIComponent(chatId)}/${encodeURIComponent(block.question_id)}/${action}`;
    try {
      await apiFetch(path, { method: "POST", body: action === "submit" ? { value } : {} });
      setValue("");
      setDone(action === "submit" ? "stored" : "declined");
    } catch (e) {
      setError(
        e instanceof ApiError && (e.code === "question_stale" || e.code === "secure_input_not_found")
          ? "This request is no longer open."
          : failureText(e),
      );
    } finally {
      setBusy(false);
    }
  }

  const bytes = new TextEncoder().encode(value).length;
  const tooLong = bytes > MAX_SECRET_BYTES;
  const off = busy || disabled;
  return (
    <form
      className="qcard"
      aria-label="Secret request"
      autoComplete="off"
      onSubmit={(e) => {
        e.preventDefault();
        if (value !== "" && !tooLong) void send("submit");
      }}
    >
      <p className="qcard-kicker">
        <Icon name="shield" size={16} /> The agent asks for a secret
      </p>
      <p className="qcard-question">
        <strong>{block.name}</strong> for {block.target_name}
      </p>
      {block.reason && <p className="qcard-reason">{block.reason}</p>}
      <label htmlFor={inputId} className="qcard-legend">
        Value — stored sealed on the server; the agent never sees it
      </label>
      <input
        id={inputId}
        className="qcard-other-input"
        type="password"
        autoComplete="new-password"
        spellCheck={false}
        value={value}
        disabled={off}
        onChange={(e) => setValue(e.target.value)}
      />
      {tooLong && (
        <p className="qcard-error" role="alert">
          At most {MAX_SECRET_BYTES} bytes.
        </p>
      )}
      {error && (
        <p className="qcard-error" role="alert">
          {error}
        </p>
      )}
      <div className="qcard-actions">
        <button type="button" className="btn btn-ghost" disabled={off} onClick={() => void send("decline")}>
          Decline
        </button>
        <button type="submit" className="btn btn-primary" disabled={off || value === "" || tooLong} aria-busy={busy}>
          {busy ? "Saving…" : "Save secret"}
        </button>
      </div>
    </form>
  );
}

const OTHER = "\u0000other";

function AskCard({ block, onAnswer, disabled }: QuestionCardProps & { block: QuestionBlock }) {
  const id = useId();
  const [choices, setChoices] = useState<Record<number, string[]>>({});
  const [other, setOther] = useState<Record<number, string>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const answered = block.answers ?? null;

  if (answered) {
    return (
      <section className="qcard qcard-answered" aria-label="Answered question">
        {block.questions.map((q) => {
          const value = answered[q.question];
          return (
            <div key={q.question} className="qcard-summary">
              <span className="qcard-q">{q.question}</span>
              <span className="qcard-a">
                <Icon name="check" size={14} /> {Array.isArray(value) ? value.join(", ") : (value ?? "—")}
              </span>
            </div>
          );
        })}
      </section>
    );
  }

  const toggle = (index: number, label: string, multi: boolean) =>
    setChoices((current) => {
      const chosen = current[index] ?? [];
      if (!multi) return { ...current, [index]: [label] };
      return { ...current, [index]: chosen.includes(label) ? chosen.filter((c) => c !== label) : [...chosen, label] };
    });

  const resolved = block.questions.map((q, i) => {
    const chosen = (choices[i] ?? []).map((c) => (c === OTHER ? (other[i] ?? "").trim() : c)).filter((c) => c !== "");
    return q.multi_select ? chosen : chosen.slice(0, 1);
  });
  const complete = resolved.every((r) => r.length > 0);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!complete || busy) return;
    const answers: QuestionAnswers = {};
    block.questions.forEach((q, i) => {
      const r = resolved[i] ?? [];
      answers[q.question] = q.multi_select ? r : (r[0] ?? "");
    });
    setBusy(true);
    setError(null);
    try {
      await onAnswer(block.question_id, answers);
    } catch (e) {
      setError(failureText(e));
    } finally {
      setBusy(false);
    }
  }

  const only = block.questions.length === 1 ? block.questions[0] : undefined;
  if (only && !only.multi_select) return <OneTapCard block={block} question={only} onAnswer={onAnswer} disabled={disabled} />;

  return (
    <form className="qcard" onSubmit={(e) => void submit(e)} aria-label="Question from the agent">
      <p className="qcard-kicker">
        <Icon name="question" size={16} /> Needs your answer
      </p>
      {block.questions.map((q, i) => {
        const multi = q.multi_select;
        const name = `${id}-${i}`;
        const chosen = choices[i] ?? [];
        return (
          <fieldset key={q.question} className="qcard-set">
            <legend className="qcard-legend">
              {q.header && <span className="qcard-header">{q.header}</span>}
              <span className="qcard-question">{q.question}</span>
              {multi && <span className="qcard-hint">Choose any</span>}
            </legend>
            {q.options.map((option) => (
              <label key={option.label} className="qcard-option" data-checked={chosen.includes(option.label) || undefined}>
                <input
                  type={multi ? "checkbox" : "radio"}
                  name={name}
                  value={option.label}
                  checked={chosen.includes(option.label)}
                  onChange={() => toggle(i, option.label, multi)}
                />
                <span className="qcard-option-text">
                  <span className="qcard-option-label">{option.label}</span>
                  {option.description && <span className="qcard-option-desc">{option.description}</span>}
                </span>
              </label>
            ))}
            <label className="qcard-option qcard-other" data-checked={chosen.includes(OTHER) || undefined}>
              <input
                type={multi ? "checkbox" : "radio"}
                name={name}
                value="other"
                checked={chosen.includes(OTHER)}
                onChange={() => toggle(i, OTHER, multi)}
              />
              <span className="qcard-option-text">
                <span className="qcard-option-label">Other</span>
              </span>
            </label>
            {chosen.includes(OTHER) && (
              <input
                className="qcard-other-input"
                type="text"
                aria-label={`Your answer to: ${q.question}`}
                placeholder="Type your answer"
                value={other[i] ?? ""}
                onChange={(e) => setOther((o) => ({ ...o, [i]: e.target.value }))}
                autoFocus
              />
            )}
          </fieldset>
        );
      })}
      {error && (
        <p className="qcard-error" role="alert">
          {error}
        </p>
      )}
      <div className="qcard-actions">
        <button type="submit" className="btn btn-primary" disabled={!complete || busy || disabled} aria-busy={busy}>
          {busy ? "Sending…" : "Send answer"}
        </button>
      </div>
    </form>
  );
}

/** One single-choice question: each option is a button that answers it. */
function OneTapCard({ block, question, onAnswer, disabled }: QuestionCardProps & { block: QuestionBlock; question: QuestionBlock["questions"][number] }) {
  const id = useId();
  /** The answer on its way (the tapped option, or the typed one). */
  const [sending, setSending] = useState<string | null>(null);
  const [other, setOther] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function answer(choice: string) {
    if (sending !== null || choice.trim() === "") return;
    setSending(choice);
    setError(null);
    try {
      await onAnswer(block.question_id, { [question.question]: choice.trim() });
    } catch (e) {
      setError(failureText(e));
      setSending(null);
    }
  }

  const off = disabled || sending !== null;
  return (
    <section className="qcard" aria-label="Question from the agent">
      <p className="qcard-kicker">
        <Icon name="question" size={16} /> Needs your answer
      </p>
      <p className="qcard-legend" id={`${id}-q`}>
        {question.header && <span className="qcard-header">{question.header}</span>}
        <span className="qcard-question">{question.question}</span>
        <span className="qcard-hint">Tap an answer to send it</span>
      </p>
      <div className="qcard-choices" role="group" aria-labelledby={`${id}-q`}>
        {question.options.map((option) => (
          <button
            key={option.label}
            type="button"
            className="qcard-option qcard-choice"
            data-checked={sending === option.label || undefined}
            disabled={off}
            aria-busy={sending === option.label || undefined}
            onClick={() => void answer(option.label)}
          >
            <span className="qcard-option-text">
              <span className="qcard-option-label">{option.label}</span>
              {option.description && <span className="qcard-option-desc">{option.description}</span>}
            </span>
            {sending === option.label && (
              <span className="qcard-sending">
                <Icon name="check" size={14} /> Sending…
              </span>
            )}
          </button>
        ))}
        {other === null ? (
          <button type="button" className="qcard-option qcard-choice" disabled={off} onClick={() => setOther("")}>
            <span className="qcard-option-text">
              <span className="qcard-option-label">Other…</span>
            </span>
          </button>
        ) : (
          <form
            className="qcard-other-form"
            onSubmit={(e) => {
              e.preventDefault();
              void answer(other);
            }}
          >
            <input
              className="qcard-other-input"
              type="text"
              aria-label={`Your answer to: ${question.question}`}
              placeholder="Type your answer"
              value={other}
              disabled={off}
              onChange={(e) => setOther(e.target.value)}
              autoFocus
            />
            <div className="qcard-actions">
              <button type="button" className="btn btn-ghost" disabled={off} onClick={() => setOther(null)}>
                Back
              </button>
              <button type="submit" className="btn btn-primary" disabled={off || other.trim() === ""} aria-busy={sending !== null}>
                {sending !== null ? "Sending…" : "Send answer"}
              </button>
            </div>
          </form>
        )}
      </div>
      {error && (
        <p className="qcard-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

const DECISION_TEXT: Record<ApprovalAnswers["decision"], string> = {
  allow: "Allowed once",
  allow_chat: "Allowed for this chat",
  deny: "Denied",
};

function ApprovalCard({ block, onAnswer, disabled }: QuestionCardProps & { block: ApprovalBlock }) {
  const [denying, setDenying] = useState(false);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const reasonId = useId();

  if (block.answers) {
    return (
      <section className="qcard qcard-answered" aria-label="Answered approval">
        <div className="qcard-summary">
          <span className="qcard-q">
            {block.tool}: <code>{block.input}</code>
          </span>
          <span className="qcard-a" data-decision={block.answers.decision}>
            <Icon name={block.answers.decision === "deny" ? "close" : "check"} size={14} /> {DECISION_TEXT[block.answers.decision]}
            {block.answers.reason ? ` — ${block.answers.reason}` : ""}
          </span>
        </div>
      </section>
    );
  }

  async function decide(answers: ApprovalAnswers) {
    setBusy(true);
    setError(null);
    try {
      await onAnswer(block.question_id, answers);
    } catch (e) {
      setError(failureText(e));
    } finally {
      setBusy(false);
    }
  }

  const off = busy || disabled;
  return (
    <section className="qcard" aria-label="Approval request">
      <p className="qcard-kicker">
        <Icon name="shield" size={16} /> Allow this action?
      </p>
      <p className="qcard-question">
        The agent wants to use <strong>{block.tool}</strong>
      </p>
      <pre className="qcard-code">{block.input}</pre>
      {block.reason && <p className="qcard-reason">{block.reason}</p>}
      {denying ? (
        <form
          className="qcard-deny"
          onSubmit={(e) => {
            e.preventDefault();
            void decide(reason.trim() ? { decision: "deny", reason: reason.trim() } : { decision: "deny" });
          }}
        >
          <label htmlFor={reasonId} className="qcard-legend">
            Reason (optional)
          </label>
          <textarea id={reasonId} className="qcard-reason-input" rows={2} value={reason} onChange={(e) => setReason(e.target.value)} autoFocus />
          <div className="qcard-actions">
            <button type="button" className="btn btn-ghost" onClick={() => setDenying(false)} disabled={off}>
              Back
            </button>
            <button type="submit" className="btn btn-danger" disabled={off} aria-busy={busy}>
              Deny
            </button>
          </div>
        </form>
      ) : (
        <div className="qcard-actions qcard-actions-wrap">
          <button type="button" className="btn btn-primary" disabled={off} onClick={() => void decide({ decision: "allow" })}>
            Allow once
          </button>
          <button type="button" className="btn btn-secondary" disabled={off} onClick={() => void decide({ decision: "allow_chat" })}>
            Allow for this chat
          </button>
          <button type="button" className="btn btn-ghost" disabled={off} onClick={() => setDenying(true)}>
            Deny…
          </button>
        </div>
      )}
      {error && (
        <p className="qcard-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/** The plan a plan-mode turn proposes: approve it as written, edit it then approve, or reject
 * it with a reason (the agent keeps planning). Approving lets the same turn carry it out. */
function PlanApprovalCard({ block, onAnswer, disabled }: QuestionCardProps & { block: PlanApprovalBlock }) {
  const [mode, setMode] = useState<"view" | "edit" | "reject">("view");
  const [draft, setDraft] = useState(block.plan);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const editId = useId();
  const reasonId = useId();

  if (block.answers) {
    const approved = block.answers.decision !== "deny";
    return (
      <section className="qcard qcard-answered qcard-plan" aria-label="Answered plan">
        <details className="qcard-plan-body">
          <summary className="qcard-q">Proposed plan</summary>
          <Markdown text={block.answers.plan ?? block.plan} />
        </details>
        <span className="qcard-a" data-decision={block.answers.decision}>
          <Icon name={approved ? "check" : "close"} size={14} /> {approved ? (block.answers.plan ? "Approved with your edits" : "Approved") : "Rejected"}
          {block.answers.reason ? ` — ${block.answers.reason}` : ""}
        </span>
      </section>
    );
  }

  async function decide(answers: ApprovalAnswers) {
    setBusy(true);
    setError(null);
    try {
      await onAnswer(block.question_id, answers);
    } catch (e) {
      setError(failureText(e));
    } finally {
      setBusy(false);
    }
  }

  const off = busy || disabled;
  const edited = draft.trim() !== "" && draft.trim() !== block.plan.trim();
  return (
    <section className="qcard qcard-plan" aria-label="Plan to approve">
      <p className="qcard-kicker">
        <Icon name="check" size={16} /> The agent proposes a plan
      </p>
      {mode === "edit" ? (
        <form
          className="qcard-deny"
          onSubmit={(e) => {
            e.preventDefault();
            void decide(edited ? { decision: "allow", plan: draft.trim() } : { decision: "allow" });
          }}
        >
          <label htmlFor={editId} className="qcard-legend">
            Edit the plan
          </label>
          <textarea id={editId} className="qcard-reason-input qcard-plan-edit" rows={10} value={draft} onChange={(e) => setDraft(e.target.value)} autoFocus />
          <div className="qcard-actions">
            <button type="button" className="btn btn-ghost" onClick={() => setMode("view")} disabled={off}>
              Back
            </button>
            <button type="submit" className="btn btn-primary" disabled={off || draft.trim() === ""} aria-busy={busy}>
              {edited ? "Approve edited plan" : "Approve"}
            </button>
          </div>
        </form>
      ) : (
        <div className="qcard-plan-body">{block.plan.trim() ? <Markdown text={block.plan} /> : <p className="qcard-reason">The agent gave no plan text.</p>}</div>
      )}
      {mode === "reject" && (
        <form
          className="qcard-deny"
          onSubmit={(e) => {
            e.preventDefault();
            void decide(reason.trim() ? { decision: "deny", reason: reason.trim() } : { decision: "deny" });
          }}
        >
          <label htmlFor={reasonId} className="qcard-legend">
            What should change? (optional)
          </label>
          <textarea id={reasonId} className="qcard-reason-input" rows={2} value={reason} onChange={(e) => setReason(e.target.value)} autoFocus />
          <div className="qcard-actions">
            <button type="button" className="btn btn-ghost" onClick={() => setMode("view")} disabled={off}>
              Back
            </button>
            <button type="submit" className="btn btn-danger" disabled={off} aria-busy={busy}>
              Reject
            </button>
          </div>
        </form>
      )}
      {mode === "view" && (
        <div className="qcard-actions">
          <button type="button" className="btn btn-ghost" onClick={() => setMode("reject")} disabled={off}>
            Reject
          </button>
          <button type="button" className="btn btn-secondary" onClick={() => setMode("edit")} disabled={off}>
            Edit
          </button>
          <button type="button" className="btn btn-primary" onClick={() => void decide({ decision: "allow" })} disabled={off} aria-busy={busy}>
            Approve
          </button>
        </div>
      )}
      {error && (
        <p className="qcard-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
