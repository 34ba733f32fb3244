import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { ApprovalBlock, PlanApprovalBlock, QuestionBlock, SecureInputBlock } from "../../api/types";
import { QuestionCard } from "./QuestionCard";

const ask: QuestionBlock = {
  type: "question",
  question_id: "q1",
  kind: "question",
  questions: [
    { question: "Which color?", header: "Color", options: [{ label: "Blue" }, { label: "Red" }], multi_select: false },
    { question: "Which sizes?", options: [{ label: "S" }, { label: "M" }], multi_select: true },
  ],
};

describe("QuestionCard", () => {
  const plan: PlanApprovalBlock = { type: "question", question_id: "p1", kind: "plan", plan: "1. Read the code\n2. Add the toggle" };

  it("approves a proposed plan as written, or edited, and rejects it with a reason", async () => {
    const onAnswer = vi.fn(() => Promise.resolve());
    const { unmount } = render(<QuestionCard block={plan} onAnswer={onAnswer} disabled={false} />);
    expect(screen.getByRole("region", { name: "Plan to approve" }).textContent).toContain("Add the toggle");
    fireEvent.click(screen.getByRole("button", { name: "Approve" }));
    await vi.waitFor(() => expect(onAnswer).toHaveBeenLastCalledWith("p1", { decision: "allow" }));
    unmount();

    const second = render(<QuestionCard block={plan} onAnswer={onAnswer} disabled={false} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit" }));
    const editor = screen.getByRole("textbox", { name: "Edit the plan" });
    expect((editor as HTMLTextAreaElement).value).toBe(plan.plan);
    fireEvent.change(editor, { target: { value: `${plan.plan}\n3. Write tests` } });
    fireEvent.click(screen.getByRole("button", { name: "Approve edited plan" }));
    await vi.waitFor(() =>
      expect(onAnswer).toHaveBeenLastCalledWith("p1", { decision: "allow", plan: "1. Read the code\n2. Add the toggle\n3. Write tests" }),
    );
    second.unmount();

    render(<QuestionCard block={plan} onAnswer={onAnswer} disabled={false} />);
    fireEvent.click(screen.getByRole("button", { name: "Reject" }));
    fireEvent.change(screen.getByRole("textbox", { name: /What should change/ }), { target: { value: "smaller steps" } });
    fireEvent.click(screen.getByRole("button", { name: "Reject" }));
    await vi.waitFor(() => expect(onAnswer).toHaveBeenLastCalledWith("p1", { decision: "deny", reason: "smaller steps" }));
  });

  it("shows an answered plan with what the owner decided", () => {
    const answered: PlanApprovalBlock = { ...plan, answers: { decision: "allow", plan: "1. Only this" } };
    render(<QuestionCard block={answered} onAnswer={vi.fn()} disabled={false} />);
    const card = screen.getByRole("region", { name: "Answered plan" });
    expect(card.textContent).toContain("Approved with your edits");
    expect(card.textContent).toContain("Only this");
  });

  it("answers with labels keyed by question text, lists for multi-select, and free text for Other", async () => {
    const onAnswer = vi.fn(() => Promise.resolve());
    render(<QuestionCard block={ask} onAnswer={onAnswer} disabled={false} />);
    const send = screen.getByRole("button", { name: "Send answer" });
    expect((send as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(screen.getAllByRole("radio", { name: /Other/ })[0]!);
    fireEvent.change(screen.getByRole("textbox", { name: "Your answer to: Which color?" }), { target: { value: "Teal" } });
    fireEvent.click(screen.getByRole("checkbox", { name: "S" }));
    fireEvent.click(screen.getByRole("checkbox", { name: "M" }));
    fireEvent.click(send);
    await vi.waitFor(() => expect(onAnswer).toHaveBeenCalledWith("q1", { "Which color?": "Teal", "Which sizes?": ["S", "M"] }));
  });

  it("keeps the choices and says why when sending fails", async () => {
    render(<QuestionCard block={ask} onAnswer={() => Promise.reject(new Error("Nope."))} disabled={false} />);
    fireEvent.click(screen.getByRole("radio", { name: "Blue" }));
    fireEvent.click(screen.getByRole("checkbox", { name: "S" }));
    fireEvent.click(screen.getByRole("button", { name: "Send answer" }));
    await screen.findByText("Nope.");
    expect(screen.getByRole<HTMLInputElement>("radio", { name: "Blue" }).checked).toBe(true);
  });

  it("offers allow once, allow for this chat, and deny with a reason for approvals", async () => {
    const block: ApprovalBlock = { type: "question", question_id: "a1", kind: "approval", tool: "Bash", input: "rm -rf build" };
    const onAnswer = vi.fn(() => Promise.resolve());
    render(<QuestionCard block={block} onAnswer={onAnswer} disabled={false} />);
    expect(screen.getByRole("button", { name: "Allow once" })).toBeTruthy();
    expect(screen.getByRole("button", { name: "Allow for this chat" })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Deny…" }));
    fireEvent.change(screen.getByLabelText("Reason (optional)"), { target: { value: "not now" } });
    fireEvent.click(screen.getByRole("button", { name: "Deny" }));
    await vi.waitFor(() => expect(onAnswer).toHaveBeenCalledWith("a1", { decision: "deny", reason: "not now" }));
  });

  it("answers a single-choice question on one tap, showing the answer on its way", async () => {
    const one: QuestionBlock = { type: "question", question_id: "q2", kind: "question", questions: [{ question: "Ship it?", options: [{ label: "Yes" }, { label: "No" }], multi_select: false }] };
    let resolve: () => void = () => undefined;
    const onAnswer = vi.fn(() => new Promise<void>((r) => (resolve = r)));
    render(<QuestionCard block={one} onAnswer={onAnswer} disabled={false} />);
    expect(screen.queryByRole("button", { name: "Send answer" })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Yes" }));
    expect(onAnswer).toHaveBeenCalledWith("q2", { "Ship it?": "Yes" });
    expect(screen.getByRole("button", { name: /Yes/ }).textContent).toContain("Sending…");
    expect(screen.getByRole<HTMLButtonElement>("button", { name: "No" }).disabled).toBe(true);
    resolve();
    await vi.waitFor(() => expect(screen.getByRole<HTMLButtonElement>("button", { name: "No" }).disabled).toBe(true));
  });

  it("lets a one-tap question be answered in words, and tapped again after a failure", async () => {
    const one: QuestionBlock = { type: "question", question_id: "q3", kind: "question", questions: [{ question: "Name?", options: [{ label: "Ada" }], multi_select: false }] };
    const onAnswer = vi.fn().mockRejectedValueOnce(new Error("Offline.")).mockResolvedValue(undefined);
    render(<QuestionCard block={one} onAnswer={onAnswer} disabled={false} />);
    fireEvent.click(screen.getByRole("button", { name: "Ada" }));
    await screen.findByText("Offline.");
    fireEvent.click(screen.getByRole("button", { name: "Other…" }));
    fireEvent.change(screen.getByRole("textbox", { name: "Your answer to: Name?" }), { target: { value: "Grace" } });
    fireEvent.click(screen.getByRole("button", { name: "Send answer" }));
    await vi.waitFor(() => expect(onAnswer).toHaveBeenLastCalledWith("q3", { "Name?": "Grace" }));
  });

  it("shows an answered card as a summary", () => {
    render(<QuestionCard block={{ ...ask, answers: { "Which color?": "Blue", "Which sizes?": ["S"] } }} onAnswer={() => Promise.resolve()} disabled={false} />);
    expect(screen.getByRole("region", { name: "Answered question" }).textContent).toContain("Blue");
    expect(screen.queryByRole("button", { name: "Send answer" })).toBeNull();
  });

  it("takes a secret in a masked field, posts it to its own route, and never shows it again", async () => {
    const block: SecureInputBlock = { type: "question", question_id: "s1", kind: "secure_input", name: "API_KEY", app_id: 3, target_name: "Weather" };
    const sent: { url: string; body: string }[] = [];
    const fetchMock = vi.fn((url: string, init?: RequestInit) => {
      sent.push({ url, body: typeof init?.body === "string" ? init.body : "" });
      return Promise.resolve(new Response(null, { status: 204 }));
    });
    vi.stubGlobal("fetch", fetchMock);
    const onAnswer = vi.fn(() => Promise.resolve());
    render(<QuestionCard block={block} onAnswer={onAnswer} disabled={false} chatId="c1" live />);
    const field = screen.getByLabelText(/Value/);
    expect(field.getAttribute("type")).toBe("password");
    fireEvent.change(field, { target: { value: "sk-123" } });
    fireEvent.click(screen.getByRole("button", { name: "Save secret" }));
    await screen.findByText("Saved");
    expect(sent.map((s) => s.url)).toEqual(["/api/secure-inputs/c1/s1/submit"]);
    expect(JSON.parse(sent[0]?.body ?? "")).toEqual({ value: "sk-123" });
    expect(onAnswer).not.toHaveBeenCalled();
    expect(screen.queryByDisplayValue("sk-123")).toBeNull();
    vi.unstubAllGlobals();
  });

  it("says a secret request no longer waits once its turn ended", () => {
    const block: SecureInputBlock = { type: "question", question_id: "s2", kind: "secure_input", name: "token", connector_id: 1, target_name: "Notes" };
    render(<QuestionCard block={block} onAnswer={() => Promise.resolve()} disabled={false} chatId="c1" live={false} />);
    expect(screen.getByText("No longer waiting")).toBeTruthy();
    expect(screen.queryByLabelText(/Value/)).toBeNull();
  });
});
