// Reviewing a real Codex turn on a phone (issue 37): the real server runs the real Codex CLI
// (app-server) against the scripted Responses server (tests/fake-providers/mock_openai.py),
// which has it plan the work with Codex's `update_plan` tool, add a file and patch it with
// apply_patch, look a page up with its hosted web search, and run a command. The plan shows as
// a card that moves on live and stays in the settled reply; the reply shows its tool work as
// one grouped line that opens into the steps (the search saying what it opened), the page as a
// source chip, and a "Files changed" summary whose file opens its coloured diff. A second turn
// has Codex spawn a sub-agent (multi-agent v2; the scripted server answers its conversation
// from `agent_steps`), which shows as a chip with its own step and report. The same review as a
// Claude turn (review.test.mjs, goal.test.mjs), from Codex's own events.
// Checks are structural (elements, counts, text), with a screenshot kept as an artifact.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (scripts/test sets both); the Codex CLI from
// MOBIUS_CODEX_BIN or the pinned install.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe } from "node:test";
import {
  apiClient,
  codexBin,
  codexEnv,
  horizontalOverflow,
  openBrowser,
  PHONE,
  screenshot,
  send,
  setupOwner,
  signInAsOwner,
  startMockOpenAI,
  startTestServer,
  stepper,
  tearDown,
  TURN_TIMEOUT,
  turnEnds,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const WC_PAGE = "https://www.gnu.org/software/coreutils/manual/html_node/wc-invocation.html";

// Codex's plan tool (the server turns it on: 0.171 offers it only when asked to).
const plan = (explanation, ...statuses) => ({
  name: "update_plan",
  arguments: { explanation, plan: ["Write notes.ts", "Check it"].map((step, i) => ({ step, status: statuses[i] })) },
});

// Codex's sub-agent tools (the `agents` namespace the server configures).
const agents = (name, args) => ({ namespace: "agents", name, arguments: args });

// The first patch is slow the first time it is served, so the plan's first state shows a while.
const SCRIPT = {
  steps: [
    { text: "Writing notes.ts.", function_call: plan("Two steps", "in_progress", "pending") },
    { apply_patch: "*** Begin Patch\n*** Add File: notes.ts\n+export const a = 1;\n+export const b = 2;\n*** End Patch\n", delay_s: 3 },
    { apply_patch: "*** Begin Patch\n*** Update File: notes.ts\n@@\n export const a = 1;\n-export const b = 2;\n+export const b = 20;\n+export const c = 3;\n*** End Patch\n" },
    {
      web_search: [{ type: "search", query: "wc count lines" }, { type: "open_page", url: WC_PAGE }],
      shell: "wc -l notes.ts",
      function_call: plan("Written and checked", "completed", "completed"),
    },
    { text: "All done: notes.ts has three constants." },
    // The second turn: a sub-agent finds the config while Codex waits for it.
    { text: "Asking a helper.", function_call: agents("spawn_agent", { task_name: "find_config", message: "Find the config file.", fork_turns: "none" }) },
    { function_call: agents("wait_agent", { timeout_ms: 30000 }) },
    { text: "The helper found it." },
  ],
  agent_steps: [{ shell: "echo helper-ran" }, { text: "It is in a.toml" }],
  default: { text: "Nothing more." },
};

if (!process.env.MOBIUS_BIN || !process.env.MOBIUS_FRONTEND_DIR) throw new Error("MOBIUS_BIN and MOBIUS_FRONTEND_DIR not set (run scripts/test)");
if (!existsSync(codexBin())) throw new Error(`no Codex CLI at ${codexBin()} (scripts/test installs it)`);

let mock;
let server;
let phone;
let problems = [];
let ownerToken;
const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "codex-review", timeout: STEP_TIMEOUT, page: () => phone.page });
const reply = (page) => page.locator(".row-assistant").last();

describe("reviewing a real Codex turn on a phone (real server, real Codex CLI, scripted model)", () => {
  before(async () => {
    mock = await startMockOpenAI(SCRIPT);
    server = await startTestServer(codexEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/codex/api-key", { method: "POST", body: { api_key: "sk-mock-key" } });
    assert.equal(saved.status, 200, saved.text);
    // A model the scripted server lists (the agents suite picks the same).
    const defaults = await api("/api/settings", { method: "POST", body: { agent_defaults: { claude: {}, codex: { model: "gpt-5.5" } } } });
    assert.equal(defaults.status, 200, defaults.text);
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "codex-review-server.log", browsers: [phone], mocks: [mock] }));

  step("Codex's plan shows live as a card while the turn works", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    const response = await send(page, "Make notes.ts with a few constants");
    assert.equal(response.status(), 202);
    const card = page.locator(".plan-card");
    await card.getByText("0 of 2 done").waitFor({ timeout: TURN_TIMEOUT });
    assert.equal(await card.locator('.plan-step[data-status="in_progress"]').textContent(), "Write notes.ts, in progress");
    assert.equal(await card.locator(".plan-explanation").textContent(), "Two steps");
  });

  step("a Codex turn that plans, patches and runs settles into its plan and one grouped line", async (page) => {
    await page.getByText("All done: notes.ts has three constants.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const card = reply(page).locator(".plan-card");
    assert.equal(await card.count(), 1, "one plan card, moved on in place");
    await card.getByText("2 of 2 done").waitFor();
    assert.equal(await card.locator('.plan-step[data-status="completed"]').count(), 2);
    assert.equal(await card.locator(".plan-explanation").textContent(), "Written and checked");
    await card.scrollIntoViewIfNeeded();
    await screenshot(page, "codex-review-plan-phone.png");

    const group = reply(page).locator(".activity-group-head");
    assert.equal(await group.count(), 1, "one stretch of tool work");
    const line = (await group.textContent()) ?? "";
    assert.match(line, /ran a command/, line);
    assert.equal(await reply(page).locator(".tool").count(), 0, "closed until asked for");
    await group.click();
    assert.ok((await reply(page).locator(".tool").count()) >= 5, "the patches, the searches and the command are its steps");
    // The searches say what they looked for and opened (Codex tells only once they are done).
    await reply(page).locator(".tool").getByText("wc count lines").waitFor();
    await reply(page).locator(".tool").getByText(WC_PAGE).first().waitFor();
    await group.click();
  });

  step("the page Codex opened is a source chip under the reply", async (page) => {
    const chips = reply(page).locator(".sources .source-chip");
    assert.equal(await chips.count(), 1, "the opened page; a plain search names none");
    assert.equal(await chips.getAttribute("href"), WC_PAGE);
    assert.equal((await chips.textContent())?.trim(), "gnu.org");
  });

  step("Files changed sums both patches of the file and opens its coloured diff", async (page) => {
    const files = reply(page).locator(".files-changed");
    await files.getByText("1 file changed").waitFor();
    const file = files.getByRole("button", { name: /notes\.ts/ });
    assert.match((await file.textContent()) ?? "", /\+4\s*\u22121/);
    await file.click();
    assert.equal(await files.locator('.diff-line[data-kind="add"]').count(), 4);
    assert.equal(await files.locator('.diff-line[data-kind="del"]').count(), 1);
    await files.locator(".diff-line .hljs-keyword").first().waitFor();
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await files.scrollIntoViewIfNeeded();
    await screenshot(page, "codex-review-files-changed-phone.png");
    assert.deepEqual(problems, []);
  });

  step("a sub-agent Codex spawns shows as a chip with its own step and report", async (page) => {
    await send(page, "Find the config with a helper");
    await page.getByText("The helper found it.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    // The spawn and the wait are one stretch of tool work, the sub-agent counted as one step.
    const group = reply(page).locator(".activity-group-head");
    assert.match((await group.textContent()) ?? "", /Ran a subagent, waited for subagents/);
    await group.click();
    const chip = reply(page).locator(".subagent");
    assert.equal(await chip.count(), 1);
    assert.equal(await chip.locator(".subagent-task").textContent(), "find config");
    assert.equal(await chip.getAttribute("data-status"), "done", "its call ends with the sub-agent's turn");
    assert.match((await chip.locator(".subagent-meta").textContent()) ?? "", /^1 step/);
    await chip.getByRole("button", { expanded: false }).click();
    const step = chip.locator(".subagent-steps .tool");
    assert.equal(await step.count(), 1);
    assert.match((await step.locator(".tool-input").textContent()) ?? "", /echo helper-ran/);
    assert.equal(((await chip.locator(".subagent-report pre").textContent()) ?? "").trim(), "It is in a.toml");
    // The sub-agent's words are its report, not the reply's.
    assert.equal(await reply(page).locator(".md", { hasText: "It is in a.toml" }).count(), 0);
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await chip.scrollIntoViewIfNeeded();
    await screenshot(page, "codex-review-subagent-phone.png");
    assert.deepEqual(problems, []);
  });
});
