import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GoalPin as Goal } from "../../api/types";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { GoalPin, goalProgress } from "./GoalPin";

afterEach(() => vi.unstubAllGlobals());

const goal: Goal = {
  objective: "Ship the dark mode",
  started_at: 1,
  plan: {
    steps: [
      { text: "Add the palette", status: "completed" },
      { text: "Switch the theme", status: "in_progress" },
      { text: "Test it", status: "pending" },
    ],
  },
};

describe("the pinned goal", () => {
  it("is one line with its progress and current step, opening into the plan", () => {
    render(<GoalPin chatId="g" goal={goal} offline={false} />);
    const head = screen.getByRole("button", { expanded: false });
    expect(head.textContent).toContain("Ship the dark mode");
    expect(head.textContent).toContain("Switch the theme");
    expect(screen.getByLabelText("1 of 3 steps done").textContent).toBe("1/3");
    fireEvent.click(head);
    expect(screen.getByRole("button", { expanded: true })).toBeTruthy();
    expect(screen.getAllByRole("listitem").map((li) => li.getAttribute("data-status"))).toEqual(["completed", "in_progress", "pending"]);
  });

  it("counts the steps left off a long plan's card: not done while they are open", () => {
    const steps = Array.from({ length: 50 }, (_, i) => ({ text: `Step ${i + 1}`, status: "completed" as const }));
    const long: Goal = { ...goal, plan: { steps, omitted: { pending: 9, in_progress: 1, completed: 0 } } };
    expect(goalProgress(long)).toEqual({ done: 50, total: 60, current: "More steps to do" });
    render(<GoalPin chatId="g" goal={long} offline={false} />);
    expect(screen.getByLabelText("50 of 60 steps done").textContent).toBe("50/60");
    fireEvent.click(screen.getByRole("button", { expanded: false }));
    expect(screen.getByText("+10 more steps")).toBeTruthy();
  });

  it("says the plan is coming before there is one, and asks the server to dismiss it", async () => {
    expect(goalProgress({ objective: "x", started_at: 1 })).toEqual({ done: 0, total: 0, current: "Making a plan…" });
    writeToken("tok");
    const { calls } = mockFetch({ "DELETE /api/chats/g/goal": { status: 204 } });
    render(<GoalPin chatId="g" goal={goal} offline={false} />);
    fireEvent.click(screen.getByRole("button", { expanded: false }));
    fireEvent.click(screen.getByRole("button", { name: "Dismiss goal" }));
    await vi.waitFor(() => expect(calls.map((c) => c.key)).toEqual(["DELETE /api/chats/g/goal"]));
    await vi.waitFor(() => expect(screen.getByRole("button", { name: "Dismiss goal" })).toHaveProperty("disabled", false));
  });
});
