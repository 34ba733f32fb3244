// The chat journey against the real server running the real Claude Code CLI, whose model is the
// scripted server tests/fake-providers/mock_anthropic.py: setup → Settings → connect Claude with
// an API key → new chat → streamed reply with a tool block → a question card answered → a
// message queued behind a running turn runs next → Stop mid-turn re-sends the cleared queue →
// drawer rename/pin/delete+undo → reload keeps transcript and draft → offline reload still
// shows the shell and the cached chat → back online the chat streams again. Accessibility is
// scanned with axe-core on each main view; screenshots go to tests/artifacts/.
//
// Steering runs against a server and model script of its own (so the journey's chat keeps its
// steps): Ctrl+Enter steers words into a running turn on a desktop, the composer's Steer sends
// the whole queue in as one message, and a queued row's "Send now" steers it in on a phone.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as journey.test.mjs); the Claude CLI comes from
// MOBIUS_CLAUDE_BIN or $MOBIUS_CLI_DIR/node_modules/.bin/claude
// (default /var/cache/mobius-agent-clis).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  accessibilityProblems,
  agentEnv,
  ARTIFACTS,
  assertFitsAndLegible,
  claudeBin,
  DESKTOP,
  eventually,
  openBrowser,
  OWNER,
  PHONE,
  saveArtifact,
  screenshot,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
  TURN_TIMEOUT,
  composer,
  liveRow,
  send,
  stopButton,
  turnEnds,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;

// The model's script. The mock picks a step by how many assistant turns the request history
// holds, so each owner message below lands on a known step.
const SCRIPT = {
  steps: [
    {
      thinking: "The owner wants a greeting file; Write is the right tool.",
      text: "Creating hello.txt.",
      tool_use: { name: "Write", input: { file_path: "{cwd}/hello.txt", content: "hello from the mock\n" } },
    },
    {
      text:
        "Done. I wrote **hello.txt** in the workspace.\n\n| file | bytes |\n|---|---|\n| hello.txt | 20 |\n\n```ts\nconst greeting: string = \"hello\";\nconsole.log(greeting);\n```\n\nThe growth is $x^2$ per step:\n\n$$\n\\sum_{i=1}^{n} i^2\n$$\n\nSee [the docs](https://example.com/docs).",
    },
    {
      tool_use: {
        name: "AskUserQuestion",
        input: {
          questions: [
            {
              question: "Which color?",
              header: "Color",
              multiSelect: false,
              options: [
                { label: "Blue", description: "Calm and cool" },
                { label: "Red", description: "Warm and loud" },
              ],
            },
          ],
        },
      },
    },
    { text: "You picked Blue." },
    { text: "The slow reply is here.", delay_s: 6 },
    { text: "Second message handled." },
    // Stopped while it waits. Whether the re-sent message lands on this step again (no delay the
    // second time) or on the default depends on what the CLI kept of the stopped turn.
    { text: "Picked up again.", delay_s: 40 },
  ],
  // Every turn past the script waits 3 s the first time, long enough to go offline mid-turn.
  default: { text: "Default reply.", delay_s: 3 },
};

/** A shell command that runs for half a minute (Claude refuses a bare `sleep`). */
const SLOW_COMMAND = "/usr/bin/python3 -c 'import time; time.sleep(30)'";

// Steering with Claude Code interrupts the running step and continues the session with the
// owner's words. The step below says something, then starts a slow command; the tests steer
// only once that command runs, when the assistant message with the tool call is complete in
// the CLI's history. The interrupt rejects the command and the next request holds exactly one
// more assistant message, so the continuation lands on the following step, deterministically.
const slowStep = (text) => ({ text, tool_use: { name: "Bash", input: { command: SLOW_COMMAND, description: "wait" } } });
const STEER_SCRIPT = {
  steps: [
    slowStep("Starting the long job."),
    { text: "Steered: a summary instead." },
    slowStep("Starting a second long job."),
    { text: "Took both queued notes." },
    slowStep("Starting a third long job."),
    { text: "Took your queued note." },
  ],
  default: { text: "Nothing more to steer." },
};

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
const cliMissing = !existsSync(claudeBin());

let mock;
let server;
let phone;
let problems = [];
let chatUrl;

const step = stepper({ prefix: "chat", timeout: STEP_TIMEOUT, page: () => phone.page });

const lastAssistant = (page) => page.locator(".row-assistant").last();
/** Waits until the live row's slow command runs (the moment a steer interrupts it cleanly). */
async function slowCommandRuns(page, said) {
  const live = page.locator('.row[data-live="true"]');
  await live.getByText(said).waitFor({ timeout: TURN_TIMEOUT });
  await live.locator('.tool[data-status="running"]').waitFor({ timeout: TURN_TIMEOUT });
}

/** The transcript's rows in order: "user: …" or "assistant: …" with their visible text. */
async function transcript(page) {
  return page.locator(".chat-content .row").evaluateAll((rows) =>
    rows.map((row) => `${row.classList.contains("row-user") ? "user" : "assistant"}: ${row.textContent?.replace(/\s+/g, " ").trim()}`),
  );
}

/** Fails unless `parts` appear as consecutive rows, each row matching its part. */
async function assertConsecutive(page, parts) {
  const rows = await transcript(page);
  const start = rows.findIndex((row) => row.startsWith(parts[0][0]) && row.includes(parts[0][1]));
  assert.ok(start >= 0, `no ${parts[0].join(" row with ")} in ${JSON.stringify(rows)}`);
  parts.forEach(([role, text], i) => {
    const row = rows[start + i] ?? "";
    assert.ok(row.startsWith(`${role}:`) && row.includes(text), `row ${start + i} should be ${role} "${text}": ${JSON.stringify(rows.slice(start))}`);
  });
}

async function expectEnabled(locator) {
  await locator.waitFor();
  await locator.page().waitForFunction((el) => !el.disabled, await locator.elementHandle());
}

async function assertAccessible(page, view) {
  await assertFitsAndLegible(page, view);
  const found = await accessibilityProblems(page);
  assert.deepEqual(found, [], `axe found serious/critical problems on ${view}`);
}

// Never skipped: scripts/test installs the CLI and sets the variables, so a gap is a failure.
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (cliMissing) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

describe("chat journey on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "chat-server.log", browsers: [phone], mocks: [mock] }));

  step("setup opens a usable shell with a hint to connect an agent", async (page) => {
    await page.goto(server.origin + "/");
    await page.getByRole("heading", { name: "Welcome to Möbius" }).waitFor();
    await assertAccessible(page, "setup");
    await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
    await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
    await page.getByLabel("Confirm password", { exact: true }).fill(OWNER.password);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "No chats yet" }).waitFor();
    await page.getByRole("button", { name: "Connect Claude or Codex in Settings" }).waitFor();
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    await screenshot(page, "chat-empty-phone.png");
    await assertAccessible(page, "the empty chat");
    // The service worker installs and takes this page over on first install.
    await page.waitForFunction(() => navigator.serviceWorker?.controller !== null, null, { timeout: 15_000 });
  });

  step("sending with no agent connected keeps the draft and points to Settings", async (page) => {
    const response = await send(page, "hello before connecting");
    assert.equal(response.status(), 409);
    await page.getByText("No agent is connected").waitFor();
    assert.equal(await composer(page).inputValue(), "hello before connecting");
    await composer(page).fill("");
  });

  step("the drawer opens on Back-able history and lists Settings", async (page) => {
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    await drawer.waitFor();
    await screenshot(page, "drawer-phone.png");
    await assertAccessible(page, "the drawer");
    await page.goBack();
    await drawer.waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Open chats" }).click();
    await drawer.getByRole("button", { name: "Settings" }).click();
    // Settings reads like a phone's: a list of sections, each its own page.
    await page.getByRole("navigation", { name: "Settings sections" }).getByRole("button", { name: /^Agents/ }).click();
    await page.locator(".topbar-title", { hasText: "Agents" }).waitFor();
  });

  step("Settings connects Claude with an API key", async (page) => {
    const claude = page.getByRole("article", { name: "Claude Code" });
    await claude.getByText(/Installed · /).waitFor();
    await screenshot(page, "settings-phone.png");
    await assertAccessible(page, "settings");
    await claude.getByRole("button", { name: "Connect Claude" }).click();
    await claude.getByLabel("Or use an API key").fill("sk-ant-mock");
    await claude.getByRole("button", { name: "Save key" }).click();
    await claude.getByText(/^Connected/).waitFor();
    await screenshot(page, "settings-connected-phone.png");
    // Done leaves Settings for the chat it was opened from, over the list and the section.
    await page.getByRole("button", { name: "Done", exact: true }).click();
    await page.waitForURL(/\/chat\//);
    chatUrl = page.url();
    await page.getByRole("button", { name: "Connect Claude or Codex in Settings" }).waitFor({ state: "detached" });
  });

  step("a message streams a reply with a tool block and Markdown", async (page) => {
    const response = await send(page, "Please create hello.txt");
    assert.equal(response.status(), 202);
    await page.locator(".bubble", { hasText: "Please create hello.txt" }).waitFor();
    await page.getByText("Done. I wrote", { exact: false }).waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    await page.locator(".thinking summary", { hasText: "Thought process" }).waitFor();
    const tool = page.getByRole("button", { name: /Write/ });
    await tool.waitFor();
    // The file lands in the chat's own workspace (the turn's working directory), and its path
    // is shown relative to it, so the file name fits on a phone.
    const summary = (await tool.textContent()) ?? "";
    assert.ok(/Write\s*hello\.txt/.test(summary) && !summary.includes(server.dataDir) && !summary.includes("workspace/"), `tool summary: ${summary}`);
    await tool.click();
    await page.locator(".tool-pre", { hasText: "File created" }).waitFor();
    const reply = lastAssistant(page);
    await reply.locator("table").waitFor();
    await reply.locator("code.hljs").waitFor();
    await reply.locator(".math-inline .katex").waitFor();
    await reply.locator(".math-display .katex-display").waitFor();
    assert.equal(await reply.getByRole("link", { name: "the docs" }).getAttribute("target"), "_blank");
    // One row per turn: the live row became the final row.
    assert.equal(await page.locator(".row-assistant").count(), 1);
    await page.getByRole("heading", { name: "Please create hello.txt" }).or(page.locator(".topbar-title", { hasText: "Please create hello.txt" })).waitFor();
    await screenshot(page, "chat-phone.png");
    await assertAccessible(page, "a chat with a reply");
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "chat-phone-dark.png");
    await assertAccessible(page, "a chat in dark mode");
    await page.emulateMedia({ colorScheme: "light" });
  });

  step("a question card is answered and the turn continues", async (page) => {
    await send(page, "Ask me a question");
    const card = page.getByRole("region", { name: "Question from the agent" });
    await card.waitFor({ timeout: TURN_TIMEOUT });
    await screenshot(page, "question-phone.png");
    await assertAccessible(page, "a question card");
    // One single-choice question: one tap answers it.
    await card.getByRole("button", { name: /^Blue/ }).click();
    await page.getByText("You picked Blue.").waitFor({ timeout: TURN_TIMEOUT });
    await page.getByRole("region", { name: "Answered question" }).waitFor();
    await turnEnds(page);
  });

  step("a message sent during a turn waits in the queue and runs next", async (page) => {
    await send(page, "Take your time");
    await stopButton(page).waitFor();
    const queued = await send(page, "And then this");
    assert.equal((await queued.json()).status, "queued");
    const tray = page.getByRole("region", { name: "Queued messages" });
    await tray.getByText("And then this").waitFor();
    await screenshot(page, "queue-phone.png");
    // Edit it while it waits: PATCH pending/{cid}.
    await tray.getByRole("button", { name: "Edit queued message" }).click();
    await tray.getByRole("textbox", { name: "Edit queued message" }).fill("And then this, edited");
    const patched = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/pending/"));
    await tray.getByRole("button", { name: "Save" }).click();
    assert.equal((await patched).status(), 200);
    await tray.getByText("And then this, edited").waitFor();
    await page.getByText("The slow reply is here.").waitFor({ timeout: TURN_TIMEOUT });
    await tray.waitFor({ state: "detached", timeout: TURN_TIMEOUT });
    await page.locator(".bubble", { hasText: "And then this, edited" }).waitFor();
    await page.getByText("Second message handled.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
  });

  step("Stop ends the turn and re-sends exactly the cleared queue as one message", async (page) => {
    await send(page, "Start something long");
    await stopButton(page).waitFor();
    await send(page, "queued one");
    await send(page, "queued, then removed");
    await send(page, "queued two");
    const tray = page.getByRole("region", { name: "Queued messages" });
    await tray.getByText("queued two").waitFor();
    // Remove the middle one: DELETE pending/{cid}.
    const removed = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes("/pending/"));
    await tray.getByRole("listitem").filter({ hasText: "queued, then removed" }).getByRole("button", { name: "Remove queued message" }).click();
    assert.equal((await removed).status(), 200);
    await tray.getByText("queued, then removed").waitFor({ state: "detached" });
    await expectEnabled(tray.getByRole("button", { name: "Edit queued message" }).nth(1));
    // With messages queued, Stop asks what to do with them; nothing is stopped before the choice.
    await stopButton(page).click();
    const choice = page.getByRole("group", { name: "Stop the turn" });
    await choice.getByRole("button", { name: "Keep working" }).click();
    await choice.waitFor({ state: "detached" });
    await stopButton(page).waitFor();
    await stopButton(page).click();
    const stopped = page.waitForResponse((r) => r.url().endsWith("/api/chat/stop"));
    await choice.getByRole("button", { name: "Stop and send the 2 queued messages" }).click();
    const body = await (await stopped).json();
    assert.equal(body.cleared_pending_cids.length, 2);
    await tray.waitFor({ state: "detached" });
    await page.locator(".bubble", { hasText: "queued one\nqueued two" }).waitFor({ timeout: TURN_TIMEOUT });
    // The stopped turn says so, and the re-sent message gets its own turn and reply.
    await page.getByText("Stopped before replying.").or(page.locator(".tool[data-status=stopped]")).first().waitFor();
    await page.getByText("Picked up again.").or(page.getByText("Default reply.")).waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
  });

  step("the drawer renames, pins, deletes and restores a chat", async (page) => {
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    const options = drawer.getByRole("button", { name: /^Options for / }).first();
    await options.click();
    await page.getByRole("menuitem", { name: "Rename" }).click();
    const input = drawer.getByRole("textbox", { name: "Chat title" });
    await input.fill("Greeting files");
    await input.press("Enter");
    await drawer.getByRole("button", { name: "Greeting files", exact: true }).waitFor();
    await drawer.getByRole("button", { name: "Options for Greeting files" }).click();
    await page.getByRole("menuitem", { name: "Pin" }).click();
    await drawer.getByRole("heading", { name: "Pinned" }).waitFor();
    await screenshot(page, "drawer-pinned-phone.png");
    await drawer.getByRole("button", { name: "Options for Greeting files" }).click();
    await page.getByRole("menuitem", { name: "Delete" }).click();
    await page.getByText("Deleted “Greeting files”").waitFor();
    await page.getByRole("button", { name: "Undo" }).click();
    await page.waitForURL(chatUrl);
    await page.getByText("You picked Blue.").waitFor();
    await page.locator(".topbar-title", { hasText: "Greeting files" }).waitFor();
  });

  step("leaving a chat and coming back restores the exact reading position", async (page) => {
    const box = page.locator(".chat-scroll");
    // Stop half-way down the transcript's own height (a spacer left by a send can reach further,
    // and no restore could reach there again), as a reader would leave it, mid-row.
    const { key, offset } = await box.evaluate((el) => {
      const rows = [...el.querySelectorAll("[data-key]")];
      const last = rows[rows.length - 1];
      const reach = last.offsetTop + last.offsetHeight - el.clientHeight;
      if (reach < 80) throw new Error(`the transcript is too short to scroll (${reach} px)`);
      el.scrollTop = Math.floor(reach / 2);
      el.dispatchEvent(new WheelEvent("wheel"));
      el.dispatchEvent(new Event("scroll"));
      const row = rows.find((r) => r.offsetTop + r.offsetHeight > el.scrollTop);
      return { key: row.dataset.key, offset: el.scrollTop - row.offsetTop };
    });
    const target = page.locator(`[data-key="${key}"]`);
    const before = await target.evaluate((row) => Math.round(row.getBoundingClientRect().top));
    // Leave at once, before the scroll settles: leaving saves the position too.
    const chatId = chatUrl.split("/").pop();
    await page.getByRole("button", { name: "New chat" }).click();
    await page.waitForURL((url) => url.href !== chatUrl);
    await page.locator(".empty-title", { hasText: "New chat" }).waitFor();
    const saved = await page.evaluate((id) => JSON.parse(localStorage.getItem("mobius.anchors.owner") ?? "{}")[id], chatId);
    assert.deepEqual([saved?.key, saved?.offset], [key, offset], "the position saved on leaving");
    await page.goBack();
    await page.waitForURL(chatUrl);
    await target.waitFor();
    const after = await target.evaluate((row) => Math.round(row.getBoundingClientRect().top));
    assert.ok(Math.abs(after - before) <= 2, `the row moved from ${before} to ${after}`);
  });

  step("a reload keeps the transcript and the unsent draft", async (page) => {
    await composer(page).fill("a draft I want to keep");
    await page.reload();
    await page.getByText("Second message handled.").waitFor();
    assert.equal(await composer(page).inputValue(), "a draft I want to keep");
  });

  step("offline, a reload still shows the shell and the saved chat, and Send would wait for the network", async (page) => {
    await phone.context.setOffline(true);
    await page.reload();
    await page.getByText("You're offline").waitFor();
    await page.getByText("You picked Blue.").waitFor();
    assert.equal(await page.getByText("You're offline").count(), 1, "one offline note");
    // A message sent now waits in the box and goes when the phone is back online
    // (attachments.test.mjs and Composer.test.tsx cover the wait).
    assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isEnabled(), "Send stays usable offline");
    await screenshot(page, "chat-offline-phone.png");
  });

  step("back online the note goes away and Send works again", async (page) => {
    await phone.context.setOffline(false);
    await page.getByText("You're offline").waitFor({ state: "detached", timeout: 30_000 });
    await page.getByRole("button", { name: "Send", exact: true }).waitFor();
    assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isEnabled());
    await composer(page).fill("");
  });

  step("a turn that finishes while the phone is offline appears when the stream resumes", async (page) => {
    const streams = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/stream")) streams.push(r.headers()["last-event-id"] ?? null);
    });
    await send(page, "Are you back?");
    await stopButton(page).waitFor();
    const rowsBefore = await page.locator(".row-assistant").count();
    await phone.context.setOffline(true);
    await page.getByText("You're offline").waitFor();
    // Wait on the server's state, not a clock: the turn ends while the page cannot hear it.
    const token = await page.evaluate(() => localStorage.getItem("mobius.token"));
    const chatId = chatUrl.split("/").pop();
    await eventually(
      "the turn finishes on the server",
      async () => !(await (await fetch(`${server.origin}/api/chats/${chatId}?limit=20`, { headers: { Authorization: `Bearer ${token}` } })).json()).running,
      { timeoutMs: TURN_TIMEOUT },
    );
    const replies = page.getByText("Default reply.", { exact: true });
    const before = await replies.count();
    const opened = streams.length;
    await phone.context.setOffline(false);
    await replies.nth(before).waitFor({ timeout: 30_000 });
    await turnEnds(page);
    const resumed = streams.slice(opened);
    assert.ok(resumed.length > 0 && resumed.every((id) => id !== null && Number(id) > 0), `resumed with Last-Event-ID ${resumed}`);
    assert.equal(await page.locator(".row-assistant").count(), rowsBefore, "the live row became the final row, no duplicate");
  });

  step("with “Ask me first”, a tool call waits for an approval card", async (page) => {
    await page.getByRole("button", { name: "New chat" }).click();
    await page.locator(".empty-title", { hasText: "New chat" }).waitFor();
    // The chat's own options live in its info sheet, not in Settings.
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    const policy = sheet.getByLabel("Approvals");
    await expectEnabled(policy);
    const patched = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/api/chats/"));
    await policy.selectOption("ask");
    assert.deepEqual((await patched).request().postDataJSON(), { approval_policy: "ask" });
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
    await send(page, "Write the greeting file, carefully");
    const card = page.getByRole("region", { name: "Approval request" });
    await card.waitFor({ timeout: TURN_TIMEOUT });
    await card.getByText("Write").first().waitFor();
    await screenshot(page, "approval-phone.png");
    await assertAccessible(page, "an approval card");
    await card.getByRole("button", { name: "Allow once" }).click();
    await page.getByRole("region", { name: "Answered approval" }).getByText("Allowed once").waitFor();
    await page.getByText("Done. I wrote", { exact: false }).waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });

  test("on a desktop (1280×800) the sidebar, chat and settings lay out and pass the accessibility scan", { timeout: STEP_TIMEOUT }, async () => {
    const desktop = await openBrowser(DESKTOP);
    try {
      const page = desktop.page;
      const desktopProblems = watchProblems(page);
      await page.goto(chatUrl);
      await page.getByRole("heading", { name: "Sign in to Möbius" }).waitFor();
      await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
      await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByText("You picked Blue.").waitFor();
      const sidebar = await page.locator(".sidebar").boundingBox();
      assert.ok(sidebar && sidebar.width > 200, "a persistent sidebar");
      await page.getByRole("button", { name: "Open chats" }).waitFor({ state: "hidden" });
      await screenshot(page, "chat-desktop.png");
      await assertAccessible(page, "the desktop chat");
      await page.locator(".sidebar").getByRole("button", { name: "Settings" }).click();
      await page.getByRole("navigation", { name: "Settings sections" }).getByRole("button", { name: /^Agents/ }).click();
      await page.getByRole("article", { name: "Claude Code" }).waitFor();
      await screenshot(page, "settings-desktop.png");
      await assertAccessible(page, "desktop settings");
      assert.deepEqual(desktopProblems, []);
    } finally {
      await desktop.close();
    }
  });
});

/** Sets the owner up and connects Claude over the API (the journey above covers doing it in the UI). */
async function ownerWithClaude(origin) {
  const post = async (path, body, token) => {
    const response = await fetch(origin + path, {
      method: "POST",
      headers: { "content-type": "application/json", origin, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    assert.ok(response.ok, `${path} answered ${response.status}: ${await response.clone().text()}`);
    return response.json();
  };
  const { access_token: token } = await post("/api/auth/setup", OWNER);
  await post("/api/providers/claude/api-key", { api_key: "sk-ant-mock" }, token);
}

async function signIn(page, url) {
  await page.goto(url);
  await page.getByRole("heading", { name: "Sign in to Möbius" }).waitFor();
  await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
  await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
}

describe("steering a running turn (real server, real Claude Code, scripted model)", () => {
  let steerMock;
  let steerServer;
  let steerChatUrl;

  before(async () => {
    steerMock = await startMockAnthropic(STEER_SCRIPT);
    steerServer = await startTestServer(agentEnv(steerMock.url));
    await ownerWithClaude(steerServer.origin);
  });

  after(() => tearDown({ server: steerServer, log: "steer-server.log", mocks: [steerMock] }));

  /** Runs `body` in a fresh browser; on failure keeps a screenshot; asserts no page errors. */
  async function inBrowser(options, name, body) {
    const browser = await openBrowser(options);
    const pageProblems = watchProblems(browser.page);
    try {
      await body(browser.page);
      assert.deepEqual(pageProblems, []);
    } catch (error) {
      await saveArtifact(ARTIFACTS, `failure-steer-${name}.png`, await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  }

  test("on a desktop, Ctrl+Enter steers typed words in and Steer sends the whole queue in as one", { timeout: STEP_TIMEOUT * 2 }, async () => {
    await inBrowser(DESKTOP, "desktop", async (page) => {
      await signIn(page, steerServer.origin + "/");
      steerChatUrl = page.url();

      await send(page, "Run the long job");
      await slowCommandRuns(page, "Starting the long job.");
      await composer(page).fill("Summarize instead");
      const posted = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
      await composer(page).press("Control+Enter");
      // Shown at once, after the live reply, before the server answered.
      await page.locator(".row-user", { hasText: "Summarize instead" }).waitFor();
      const response = await posted;
      assert.equal(response.request().postDataJSON().steer, true);
      assert.equal((await response.json()).status, "steered");
      assert.equal(await composer(page).inputValue(), "");
      await page.getByText("Steered: a summary instead.").waitFor({ timeout: TURN_TIMEOUT });
      await turnEnds(page);
      await assertConsecutive(page, [
        ["user", "Run the long job"],
        ["assistant", "Starting the long job."],
        ["user", "Summarize instead"],
        ["assistant", "Steered: a summary instead."],
      ]);
      assert.equal(await page.locator(".row-user", { hasText: "Summarize instead" }).count(), 1, "one row for the steered words");
      // The sealed part is its own finished row: the reply went on in a new one.
      const sealed = page.locator(".row-assistant", { hasText: "Starting the long job." });
      assert.equal(await sealed.count(), 1);
      assert.equal(await sealed.getByText("Steered: a summary instead.").count(), 0);

      await send(page, "Start a second long job");
      await slowCommandRuns(page, "Starting a second long job.");
      await send(page, "first note");
      await send(page, "second note");
      const tray = page.getByRole("region", { name: "Queued messages" });
      await expectEnabled(tray.getByRole("button", { name: "Send now" }).nth(1));
      const steer = page.getByRole("button", { name: "Steer", exact: true });
      await expectEnabled(steer);
      await stopButton(page).waitFor();
      await screenshot(page, "steer-desktop.png");
      await assertAccessible(page, "the Steer button on a desktop");
      await page.emulateMedia({ colorScheme: "dark" });
      await screenshot(page, "steer-desktop-dark.png");
      await assertAccessible(page, "the Steer button on a desktop in dark mode");
      await page.emulateMedia({ colorScheme: "light" });
      const steered = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
      await steer.click();
      const steerResponse = await steered;
      assert.equal(steerResponse.request().postDataJSON().content, "first note\n\nsecond note");
      assert.equal((await steerResponse.json()).status, "steered");
      await tray.waitFor({ state: "detached" });
      await page.getByText("Took both queued notes.").waitFor({ timeout: TURN_TIMEOUT });
      await turnEnds(page);
      await assertConsecutive(page, [
        ["assistant", "Starting a second long job."],
        ["user", "first note second note"],
        ["assistant", "Took both queued notes."],
      ]);
    });
  });

  test("on a phone, a queued message's “Send now” steers it into the running turn", { timeout: STEP_TIMEOUT }, async () => {
    assert.ok(steerChatUrl, "the desktop test opened the chat");
    await inBrowser(PHONE, "phone", async (page) => {
      await signIn(page, steerChatUrl);
      await page.waitForURL(steerChatUrl);
      await page.getByText("Took both queued notes.").waitFor();

      await send(page, "Start a third long job");
      await slowCommandRuns(page, "Starting a third long job.");
      const queued = await send(page, "Use this note now");
      assert.equal((await queued.json()).status, "queued");
      const tray = page.getByRole("region", { name: "Queued messages" });
      const row = tray.getByRole("listitem").filter({ hasText: "Use this note now" });
      await expectEnabled(row.getByRole("button", { name: "Send now" }));
      await screenshot(page, "queue-send-now-phone.png");
      await assertAccessible(page, "a queued message during a turn");
      await page.emulateMedia({ colorScheme: "dark" });
      await screenshot(page, "queue-send-now-phone-dark.png");
      await assertAccessible(page, "a queued message during a turn in dark mode");
      await page.emulateMedia({ colorScheme: "light" });
      const removed = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes("/pending/"));
      const steered = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
      await row.getByRole("button", { name: "Send now" }).click();
      assert.equal((await (await removed).json()).removed, true);
      const response = await steered;
      assert.equal(response.request().postDataJSON().steer, true);
      assert.equal((await response.json()).status, "steered");
      await tray.waitFor({ state: "detached" });
      await page.getByText("Took your queued note.").waitFor({ timeout: TURN_TIMEOUT });
      await turnEnds(page);
      await assertConsecutive(page, [
        ["user", "Start a third long job"],
        ["assistant", "Starting a third long job."],
        ["user", "Use this note now"],
        ["assistant", "Took your queued note."],
      ]);
      assert.equal(await page.locator(".row-user", { hasText: "Use this note now" }).count(), 1);
    });
  });
});
