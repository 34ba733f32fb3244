//! The agent's own plan (Claude's task tools or TodoWrite, Codex's plan updates) as a card with its progress:
//! one card a reply, updated in place while the turn runs and kept in the transcript. The steps
//! list is shared with the pinned goal (`GoalPin.tsx`). A plan longer than the server keeps
//! shows the steps it kept and counts the rest (`omitted`) in its totals and a "+N more steps"
//! line.

import type { PlanCard, PlanCounts } from "../../api/types";

const STATUS_TEXT = { pending: "to do", in_progress: "in progress", completed: "done" } as const;

/** How far a whole plan got: its steps done and in all, the ones left off the card included. */
export function planProgress(plan: PlanCard): { done: number; total: number } {
  const omitted = plan.omitted;
  const done = plan.steps.filter((s) => s.status === "completed").length + (omitted?.completed ?? 0);
  const total = plan.steps.length + (omitted ? omitted.pending + omitted.in_progress + omitted.completed : 0);
  return { done, total };
}

/** The line that stands for the steps left off the card ("+10 more steps, 4 done"). */
export function moreSteps(omitted: PlanCounts | undefined): string | null {
  const count = omitted ? omitted.pending + omitted.in_progress + omitted.completed : 0;
  if (!omitted || count === 0) return null;
  const more = `+${count} more ${count === 1 ? "step" : "steps"}`;
  if (omitted.completed === 0) return more;
  return omitted.completed === count ? `${more}, all done` : `${more}, ${omitted.completed} done`;
}

/** A plan's steps, each marked to do, in progress or done, and the line for those left out. */
export function PlanSteps({ steps, omitted }: { steps: PlanCard["steps"]; omitted?: PlanCounts | undefined }) {
  const more = moreSteps(omitted);
  return (
    <>
      <ol className="plan-steps">
        {steps.map((step, i) => (
          <li key={i} className="plan-step" data-status={step.status}>
            <span className="plan-mark" aria-hidden="true" />
            <span className="plan-text">{step.text}</span>
            <span className="visually-hidden">, {STATUS_TEXT[step.status]}</span>
          </li>
        ))}
      </ol>
      {more && <p className="plan-more">{more}</p>}
    </>
  );
}

export function PlanView({ block }: { block: PlanCard }) {
  const { done, total } = planProgress(block);
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
      <PlanSteps steps={block.steps} omitted={block.omitted} />
    </section>
  );
}
