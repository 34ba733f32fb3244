// Reviewing the agent's work on a phone (issue 37), on a recorded real Claude Code turn: the
// real server runs the real CLI against the scripted model server (tests/fake-providers), which
// has it write a file, edit it, read it and run a command. The settled reply shows its tool work
// as one grouped line that opens into the steps, a "Files changed" summary whose file opens its
// diff (added and removed lines, syntax colours), and each edit's diff in its tool block. The
// phone's time zone goes with the message (the API suite checks the turn is told the owner's
// local time in it: the mock's request log keeps too little of a message to see it here).
// Checks are structural (elements, counts, text), with a screenshot kept as an artifact.
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
const FILE = "{cwd}/agent-home/notes.ts";

const SCRIPT = {
  steps: [
    { text: "Writing notes.ts.", tool_use: { name: "Write", input: { file_path: FILE, content: "export const a = 1;\nexport const b = 2;\nexport const c = 3;\n" } } },
    { tool_use: { name: "Edit", input: { file_path: FILE, old_string: "export const b = 2;", new_string: "export const b = 20;\nexport const d = 4;" } } },
    {
      tool_use: [
        { name: "Read", input: { file_path: FILE } },
        { name: "Bash", input: { command: "wc -l agent-home/notes.ts", description: "count lines" } },
      ],
    },
    { text: "All done: notes.ts has four constants." },
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
const step = stepper({ prefix: "review", timeout: STEP_TIMEOUT, page: () => phone.page });
const reply = (page) => page.locator(".row-assistant").last();

describe("reviewing a real Claude turn on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, saved.text);
    phone = await openBrowser({ ...PHONE, timezoneId: "Asia/Tokyo" });
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "review-server.log", browsers: [phone], mocks: [mock] }));

  step("a turn that writes, edits, reads and runs settles into one grouped line", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    const response = await send(page, "Make notes.ts with a few constants");
    assert.equal(response.status(), 202);
    await page.getByText("All done: notes.ts has four constants.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const group = reply(page).locator(".activity-group-head");
    assert.equal(await group.count(), 1, "one stretch of tool work");
    const line = (await group.textContent()) ?? "";
    assert.match(line, /^Edited a file, read a file, ran a command/, line);
    // Settled and closed: the steps are not rendered until asked for.
    assert.equal(await reply(page).locator(".tool").count(), 0);
    await group.click();
    assert.equal(await reply(page).locator(".tool").count(), 4);
    const edit = reply(page).locator(".tool-head").filter({ has: page.locator(".tool-name", { hasText: /^Edit$/ }) });
    assert.ok((await edit.textContent())?.includes("+2"), "the Edit's head counts its lines");
    await edit.click();
    const diff = reply(page).locator(".tool .diff");
    assert.equal(await diff.locator('.diff-line[data-kind="del"]').count(), 1);
    assert.equal(await diff.locator('.diff-line[data-kind="add"]').count(), 2);
    await group.click();
  });

  step("Files changed sums the file's edits and opens its coloured diff", async (page) => {
    const files = reply(page).locator(".files-changed");
    await files.getByText("1 file changed").waitFor();
    const file = files.getByRole("button", { name: /agent-home\/notes\.ts/ });
    assert.match((await file.textContent()) ?? "", /\+5\s*\u22121/);
    await file.click();
    assert.equal(await files.locator('.diff-line[data-kind="add"]').count(), 5);
    assert.equal(await files.locator('.diff-line[data-kind="del"]').count(), 1);
    await files.locator(".diff-line .hljs-keyword").first().waitFor();
    assert.deepEqual(await horizontalOverflow(page), [], "nothing runs past the phone's edge");
    await files.scrollIntoViewIfNeeded();
    await screenshot(page, "review-files-changed-phone.png");
  });

  step("the message carried the phone's time zone for the turn's local time", async (page) => {
    const id = new URL(page.url()).pathname.split("/").pop();
    const detail = await api(`/api/chats/${id}`);
    const sent = detail.json.messages.find((m) => m.role === "user");
    assert.equal(sent.timezone, "Asia/Tokyo");
    assert.deepEqual(problems, []);
  });

  step("a stretch of 600 steps keeps the steps near the screen: scrolled to, opened, kept open, reached by keyboard", async (page) => {
    const n = 600;
    const blocks = Array.from({ length: n }, (_, i) => ({
      type: "tool",
      tool: "Read",
      tool_use_id: `toolu_long_${i}`,
      input: `src/part${i}.ts`,
      output: `line one of part ${i}`,
      status: "done",
    }));
    const imported = await api("/api/chats", {
      method: "POST",
      body: { id: "long-stretch", title: "Long stretch", messages: [{ role: "user", content: "Read everything" }, { role: "assistant", blocks: [...blocks, { type: "text", item_id: "end", content: "Read all 600." }] }] },
    });
    assert.ok([200, 201].includes(imported.status), imported.text);
    await page.goto(server.origin + "/chat/long-stretch");
    await page.getByText("Read all 600.").waitFor();
    await reply(page).locator(".activity-group-head").click();
    const steps = reply(page).locator(".activity-group-steps");
    await steps.locator(".tool-input", { hasText: /^src\/part0\.ts$/ }).waitFor();
    const rendered = await steps.locator(".tool").count();
    assert.ok(rendered > 10 && rendered < 100, `only the steps near the screen are in the page (${rendered})`);
    assert.equal(await steps.locator(".activity-step").first().getAttribute("aria-setsize"), String(n));

    // Scroll the chat to step 400: it comes into the page where the list says it is.
    const to = (k) =>
      page.evaluate(
        ({ k }) => {
          const box = document.querySelector(".chat-scroll");
          const list = document.querySelector(".activity-group-steps");
          box.dispatchEvent(new WheelEvent("wheel", { deltaY: 1, bubbles: true }));
          box.scrollTop += list.getBoundingClientRect().top - box.getBoundingClientRect().top + k * 54 - 100;
        },
        { k },
      );
    const head = (k) => steps.locator(".tool-head").filter({ has: page.locator(".tool-input", { hasText: new RegExp(`^src/part${k}\\.ts$`) }) });
    await to(400);
    await head(400).waitFor();
    assert.ok(await head(400).isVisible(), "step 401 is on screen");
    assert.equal(await head(400).locator("xpath=ancestor::li[1]").getAttribute("aria-posinset"), "401");
    assert.equal(await head(0).count(), 0, "the first steps left the page");
    await head(400).click();
    await steps.getByText("line one of part 400").waitFor();
    await to(0);
    await head(0).waitFor();
    assert.equal(await head(400).count(), 0);
    await to(400);
    await steps.getByText("line one of part 400").waitFor();
    assert.equal(await head(400).getAttribute("aria-expanded"), "true", "the step opened is still open");

    // Tabbing from a step goes on through the steps past the ones first rendered, keys pressed
    // as fast as they come (the rows follow the focus before the next key).
    await to(0);
    await head(0).focus();
    for (let i = 0; i < 40; i++) await page.keyboard.press("Tab");
    const focused = await page.evaluate(() => document.activeElement?.closest(".activity-step")?.getAttribute("aria-posinset") ?? null);
    assert.equal(focused, "41", "the 41st step has the focus after 40 Tabs");
    assert.deepEqual(problems, []);
  });
});
