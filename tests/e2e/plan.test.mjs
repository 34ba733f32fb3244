// Plan mode on a phone (issue 37), on a real Claude Code turn: the real server runs the real CLI
// against the scripted model server (tests/fake-providers). `/plan <words>` starts the turn in
// Claude's plan permission mode; the model proposes its plan (ExitPlanMode), which arrives as a
// card; the owner approves it and the same turn goes on to write the file. Checks are structural
// (elements, text), with a screenshot kept as an artifact.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (scripts/test sets both); the Claude CLI as in
// chat.test.mjs.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe } from "node:test";
import {
  agentEnv,
  apiClient,
  claudeBin,
  horizontalOverflow,
  openBrowser,
  PHONE,
  screenshot,
  send,
  setupOwner,
  signInAsOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  TURN_TIMEOUT,
  turnEnds,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;
const PLAN = "## Notes file\n\n1. Write `notes.ts` with one constant\n2. Say when it is done";

const SCRIPT = {
  steps: [
    { text: "Here is my plan.", tool_use: { name: "ExitPlanMode", input: { plan: PLAN } } },
    { text: "Writing notes.ts.", tool_use: { name: "Write", input: { file_path: "{cwd}/agent-home/notes.ts", content: "export const a = 1;\n" } } },
    { text: "Done as planned." },
  ],
  default: { text: "Nothing more." },
};

if (!process.env.MOBIUS_BIN || !process.env.MOBIUS_FRONTEND_DIR) throw new Error("MOBIUS_BIN and MOBIUS_FRONTEND_DIR not set (run scripts/test)");
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

let mock;
let server;
let phone;
let problems = [];
let ownerToken;
const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "plan", timeout: STEP_TIMEOUT, page: () => phone.page });
const reply = (page) => page.locator(".row-assistant").last();

describe("plan mode on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, saved.text);
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "plan-server.log", browsers: [phone], mocks: [mock] }));

  step("/plan brings the agent's plan as a card before anything is written", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    const response = await send(page, "/plan make notes.ts");
    assert.equal(response.status(), 202);
    const card = page.getByRole("region", { name: "Plan to approve" });
    await card.waitFor({ timeout: TURN_TIMEOUT });
    await card.getByRole("heading", { name: "Notes file" }).waitFor();
    assert.match((await card.textContent()) ?? "", /Write notes\.ts with one constant/);
    for (const name of ["Reject", "Edit", "Approve"]) assert.ok(await card.getByRole("button", { name }).isVisible(), name);
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await screenshot(page, "plan-card-phone.png");
  });

  step("approving it lets the same turn carry the plan out", async (page) => {
    await page.getByRole("region", { name: "Plan to approve" }).getByRole("button", { name: "Approve" }).click();
    await page.getByText("Done as planned.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const answered = reply(page).getByRole("region", { name: "Answered plan" });
    await answered.waitFor();
    assert.match((await answered.textContent()) ?? "", /Approved/);
    const id = new URL(page.url()).pathname.split("/").pop();
    const detail = await api(`/api/chats/${id}`);
    assert.equal(detail.json.messages.length, 2, "one message and one reply: the same turn");
    const blocks = detail.json.messages[1].blocks;
    assert.ok(blocks.some((b) => b.type === "tool" && b.tool === "Write" && b.status === "done"), JSON.stringify(blocks));
    assert.deepEqual(problems, []);
  });
});
