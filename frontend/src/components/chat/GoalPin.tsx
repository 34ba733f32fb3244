//! The goal pinned at the top of a chat (`/goal`): one compact line — the goal, its progress
//! ("3/7") and the step in progress — that opens into the agent's whole plan. It follows the
//! plan live (`goal_changed`), on every device, until every step is done or the owner dismisses
//! it here.

import { useId, useState } from "react";
import { dismissGoal } from "../../api/chats";
import { ApiError } from "../../api/client";
import type { GoalPin as Goal } from "../../api/types";
import { Icon } from "../ui/Icon";
import { PlanSteps, planProgress } from "./Plan";

/** The pin's compact line: how far the whole plan got (steps left off its card included) and
 * the step it is on. */
export function goalProgress(goal: Goal): { done: number; total: number; current: string } {
  const steps = goal.plan?.steps ?? [];
  const { done, total } = goal.plan ? planProgress(goal.plan) : { done: 0, total: 0 };
  const step = steps.find((s) => s.status === "in_progress") ?? steps.find((s) => s.status === "pending");
  const current = step ? step.text : total === 0 ? "Making a plan…" : done === total ? "Every step is done" : "More steps to do";
  return { done, total, current };
}

export function GoalPin({ chatId, goal, offline }: { chatId: string; goal: Goal; offline: boolean }) {
  const [open, setOpen] = useState(false);
  const [dismissing, setDismissing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const bodyId = useId();
  const { done, total, current } = goalProgress(goal);

  const dismiss = async () => {
    setDismissing(true);
    setError(null);
    try {
      await dismissGoal(chatId);
      // `goal_changed` unpins it here and on the owner's other devices.
    } catch (e) {
      // Already gone (done, or dismissed elsewhere): the event removes it.
      if (!(e instanceof ApiError && e.status === 404)) setError("Couldn't dismiss the goal. Try again.");
    } finally {
      setDismissing(false);
    }
  };

  return (
    <section className="goal-pin" aria-label="Goal" data-open={open || undefined}>
      <button type="button" className="goal-pin-head" aria-expanded={open} aria-controls={bodyId} onClick={() => setOpen((o) => !o)}>
        <Icon name="pin" size={16} />
        <span className="goal-pin-text">
          <span className="goal-pin-title">{goal.objective}</span>
          <span className="goal-pin-step">{current}</span>
        </span>
        {total > 0 && (
          <span className="goal-pin-count" aria-label={`${done} of ${total} steps done`}>
            {done}/{total}
          </span>
        )}
        <Icon name="chevron-down" size={16} />
      </button>
      {total > 0 && <progress className="goal-pin-progress" max={total} value={done} aria-hidden="true" />}
      <div id={bodyId} className="goal-pin-body" hidden={!open}>
        {goal.plan ? (
          <>
            {goal.plan.explanation && <p className="plan-explanation">{goal.plan.explanation}</p>}
            <PlanSteps steps={goal.plan.steps} omitted={goal.plan.omitted} />
          </>
        ) : (
          <p className="plan-explanation">The agent has not written its plan yet.</p>
        )}
        <div className="goal-pin-actions">
          <button type="button" className="btn btn-secondary btn-small" onClick={() => void dismiss()} disabled={dismissing || offline}>
            {dismissing ? "Dismissing…" : "Dismiss goal"}
          </button>
          {error && (
            <span className="goal-pin-error" role="alert">
              {error}
            </span>
          )}
        </div>
      </div>
    </section>
  );
}
