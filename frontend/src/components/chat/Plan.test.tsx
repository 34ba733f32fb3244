import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { PlanCard } from "../../api/types";
import { PlanView, moreSteps } from "./Plan";

/** A 60-step plan as the server sends it: the 50 steps it keeps, the other 10 counted. */
const long: PlanCard = {
  steps: Array.from({ length: 50 }, (_, i) => ({ text: `Step ${i + 1}`, status: i < 12 ? "completed" : i === 12 ? "in_progress" : "pending" })),
  omitted: { pending: 10, in_progress: 0, completed: 0 },
};

describe("the plan card", () => {
  it("counts the steps left off the card in its totals and says how many there are", () => {
    render(<PlanView block={long} />);
    expect(screen.getByText("12 of 60 done")).toBeTruthy();
    expect(screen.getByLabelText("12 of 60 steps done").getAttribute("max")).toBe("60");
    expect(screen.getAllByRole("listitem")).toHaveLength(50);
    expect(screen.getByText("+10 more steps")).toBeTruthy();
  });

  it("says nothing more for a plan that fits, and which left-out steps are done", () => {
    render(<PlanView block={{ steps: long.steps }} />);
    expect(screen.getByText("12 of 50 done")).toBeTruthy();
    expect(screen.queryByText(/more step/)).toBeNull();
    expect(moreSteps({ pending: 3, in_progress: 1, completed: 6 })).toBe("+10 more steps, 6 done");
    expect(moreSteps({ pending: 0, in_progress: 0, completed: 1 })).toBe("+1 more step, all done");
  });
});
