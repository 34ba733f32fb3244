//! The agent's own plan (Claude's task tools or TodoWrite, Codex's plan updates) as a card with its progress:
//! one card a reply, updated in place while the turn runs and kept in the transcript. The steps
//! list is shared with the pinned goal (`GoalPin.tsx`).

import type { PlanBlock } from "../../api/types";

const STATUS_TEXT = { pending: "to do", in_progress: "in progress", completed: "done" } as const;

/** A plan's steps, each marked to do, in progress or done. */
export function PlanSteps({ steps }: { steps: PlanBlock["steps"] }) {
  return (
    <ol className="plan-steps">
      {steps.map((step, i) => (
        <li key={i} className="plan-step" data-status={step.status}>
          <span className="plan-mark" aria-hidden="true" />
          <span className="plan-text">{step.text}</span>
          <span className="visually-hidden">, {STATUS_TEXT[step.status]}</span>
        </li>
      ))}
    </ol>
  );
}

export function PlanView({ block }: { block: PlanBlock }) {
  const done = block.steps.filter((s) => s.status === "completed").length;
  const total = block.steps.length;
  return (
    <section className="plan-card" aria-label="Plan">
      <div className="plan-head">
        <h3 className="plan-title">Plan</h3>
        <span className="plan-count">
          {done} of {total} done
        </span>
      </div>
      <progress className="plan-progress" max={Math.max(1, total)} value={done} aria-label={`${done} of ${total} steps done`} />
      {block.explanation && <p className="plan-explanation">{block.explanation}</p>}
      <PlanSteps steps={block.steps} />
    </section>
  );
}
