// Goals and subagents on a phone (issue 37), on real Claude Code turns: the real server runs the
// real CLI against the scripted model server (tests/fake-providers). `/goal <words>` (picked
// from the composer's slash menu) pins the goal at the top of the chat; the agent's plan updates
// (Claude Code's TaskCreate/TaskUpdate, which the server asks the CLI to offer) move the pin live
// (and across a reload) until every step is done; a goal that is not done is
// dismissed by the owner. A subagent (Claude Code's Agent tool, run by the real CLI: the scripted
// model answers the subagent's own conversation from `agent_steps`; started in the background, as
// the CLI does by default) shows as a chip with its type, task, status and time, Running until
// the CLI says the agent ended, its steps folded under it instead of among the reply's. Checks are structural (elements, text), with screenshots kept as
// artifacts.
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
  composer,
  eventually,
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
// Claude Code 2.1.332's own plan tools (the server asks the CLI for them): TaskCreate adds a
// step (its id is in the result), TaskUpdate moves or deletes one.
const create = (subject) => ({ name: "TaskCreate", input: { subject, description: `${subject}, carefully`, activeForm: subject } });
const update = (taskId, status) => ({ name: "TaskUpdate", input: { taskId, status } });

const AGENT_MARKER = "SUBAGENT-TASK-7";

// Each plan update is slow the first time it is served, so every state of the pin shows a while.
const SCRIPT = {
  steps: [
    { text: "I'll plan it out.", tool_use: [create("Draft the outline"), create("Write the notes"), create("Review them")] },
    { tool_use: update("1", "in_progress") },
    { tool_use: [update("1", "completed"), update("2", "in_progress")], delay_s: 1 },
    { tool_use: [update("2", "completed"), update("3", "in_progress")], delay_s: 5 },
    { tool_use: update("3", "completed"), delay_s: 5 },
    { text: "Goal reached: the notes are written and reviewed." },
    // The next goal starts its plan afresh: the finished tasks go, two new ones come.
    { tool_use: [update("1", "deleted"), update("2", "deleted"), update("3", "deleted"), create("Tidy the folder"), create("Ship it")] },
    { tool_use: update("4", "in_progress") },
    { text: "Stopping here for now." },
    // No `run_in_background`: Claude Code starts the agent in the background; the main agent
    // goes on, and hears the report when the agent ends.
    {
      text: "Asking a subagent.",
      tool_use: { name: "Agent", input: { description: "Count the notes", prompt: `${AGENT_MARKER}: count the files in agent-home`, subagent_type: "general-purpose" } },
    },
    { text: "It is on its way." },
    { text: "The subagent counted them." },
  ],
  default: { text: "Nothing more." },
  // The subagent's own conversation (the Agent call's prompt holds the marker); its first step
  // is slow, so its chip is seen running after the main agent went on.
  agent_marker: AGENT_MARKER,
  agent_steps: [{ tool_use: { name: "Bash", input: { command: "ls agent-home", description: "list the notes" } }, delay_s: 8 }, { text: "There are no notes yet." }],
};

if (!process.env.MOBIUS_BIN || !process.env.MOBIUS_FRONTEND_DIR) throw new Error("MOBIUS_BIN and MOBIUS_FRONTEND_DIR not set (run scripts/test)");
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

let mock;
let server;
let phone;
let problems = [];
let ownerToken;
const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "goal", timeout: STEP_TIMEOUT, page: () => phone.page });
const pin = (page) => page.getByRole("region", { name: "Goal" });
const pinCount = (page) => pin(page).locator(".goal-pin-count");
const chatId = (page) => new URL(page.url()).pathname.split("/").pop();

describe("goals and subagents on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, saved.text);
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "goal-server.log", browsers: [phone], mocks: [mock] }));

  step("the slash menu offers /goal, and the goal is pinned with its plan's progress", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    await composer(page).fill("/");
    const menu = page.getByRole("listbox", { name: "Commands" });
    await menu.waitFor();
    await menu.getByRole("option", { name: /\/goal/ }).click();
    assert.equal(await composer(page).inputValue(), "/goal ");
    const response = await send(page, "/goal write my meeting notes");
    assert.equal(response.status(), 202);
    await pin(page).waitFor({ timeout: TURN_TIMEOUT });
    assert.match((await pin(page).locator(".goal-pin-title").textContent()) ?? "", /write my meeting notes/);
    // It advances with the plan: one step done, the second in progress.
    await pinCount(page).filter({ hasText: "1/3" }).waitFor({ timeout: TURN_TIMEOUT });
    assert.equal(await pin(page).locator(".goal-pin-step").textContent(), "Write the notes");
    // Compact on a phone: one line, nothing past the edge.
    const box = await pin(page).boundingBox();
    assert.ok(box && box.height <= 64, `the pin is compact: ${JSON.stringify(box)}`);
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await screenshot(page, "goal-pin-phone.png");
  });

  step("it is kept across a reload and opens into the whole plan", async (page) => {
    await page.reload();
    await pin(page).waitFor({ timeout: TURN_TIMEOUT });
    const head = pin(page).getByRole("button", { expanded: false });
    await head.click();
    const steps = pin(page).locator(".plan-step");
    assert.equal(await steps.count(), 3);
    assert.equal(await steps.first().getAttribute("data-status"), "completed");
    await screenshot(page, "goal-pin-open-phone.png");
  });

  step("once every step is done the pin goes, and the reply keeps the finished plan", async (page) => {
    await page.getByText("Goal reached: the notes are written and reviewed.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    await pin(page).waitFor({ state: "detached", timeout: TURN_TIMEOUT });
    const card = page.locator(".row-assistant").last().getByRole("region", { name: "Plan" });
    assert.match((await card.textContent()) ?? "", /3 of 3 done/);
    const detail = await api(`/api/chats/${chatId(page)}`);
    assert.equal(detail.json.goal, null);
  });

  step("a goal that is not done stays pinned until the owner dismisses it", async (page) => {
    await send(page, "/goal ship the notes");
    await turnEnds(page);
    await pinCount(page).filter({ hasText: "0/2" }).waitFor({ timeout: TURN_TIMEOUT });
    await pin(page).getByRole("button", { expanded: false }).click();
    await pin(page).getByRole("button", { name: "Dismiss goal" }).click();
    await pin(page).waitFor({ state: "detached" });
    await eventually("the server unpinned it", async () => (await api(`/api/chats/${chatId(page)}`)).json.goal === null || undefined);
  });

  step("a subagent shows as a chip with its own steps, not among the reply's", async (page) => {
    await send(page, "Count my notes with a subagent");
    // Launched in the background: the main agent goes on while the chip still says Running.
    await page.getByText("It is on its way.").waitFor({ timeout: TURN_TIMEOUT });
    const live = page.locator(".row-assistant").last().locator(".subagent");
    assert.equal(await live.getAttribute("data-status"), "running", "launched is not done");
    await screenshot(page, "subagent-running-phone.png");
    // A reload meanwhile shows it running too (the server keeps the call open).
    await page.reload();
    const reloaded = page.locator(".row-assistant").last().locator(".subagent");
    await reloaded.waitFor({ timeout: TURN_TIMEOUT });
    assert.equal(await reloaded.getAttribute("data-status"), "running", "still running after a reload");
    await page.getByText("The subagent counted them.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const reply = page.locator(".row-assistant").last();
    const chip = reply.locator(".subagent");
    assert.equal(await chip.count(), 1);
    assert.equal(await chip.locator(".subagent-kind").textContent(), "general-purpose");
    assert.equal(await chip.locator(".subagent-task").textContent(), "Count the notes");
    assert.equal(await chip.getAttribute("data-status"), "done");
    assert.match((await chip.locator(".subagent-meta").textContent()) ?? "", /^1 step/);
    // The subagent's command is under the chip only: the reply shows no tool block of its own.
    assert.equal(await reply.locator(":scope > .tool, :scope > .activity-group").count(), 0);
    await chip.getByRole("button", { expanded: false }).click();
    const step = chip.locator(".subagent-steps .tool");
    assert.equal(await step.count(), 1);
    assert.match((await step.locator(".tool-input").textContent()) ?? "", /ls agent-home/);
    // What the call gave back: the subagent's report (from the CLI's notification of its end,
    // not the launch notice).
    assert.equal(((await chip.locator(".subagent-report pre").textContent()) ?? "").trim(), "There are no notes yet.");
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await screenshot(page, "subagent-chip-phone.png");
    // Stored as the server folded it: the step names its call.
    const detail = await api(`/api/chats/${chatId(page)}`);
    const blocks = detail.json.messages.at(-1).blocks;
    const call = blocks.find((b) => b.type === "tool" && b.tool === "Agent");
    assert.ok(call && blocks.some((b) => b.type === "tool" && b.tool === "Bash" && b.parent_tool_use_id === call.tool_use_id), JSON.stringify(blocks));
    assert.ok(!blocks.some((b) => b.type === "text" && b.content.includes("There are no notes yet")), "the subagent's words are its report, not the reply");
    assert.deepEqual(problems, []);
  });
});
