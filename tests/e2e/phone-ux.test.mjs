// What a phone user found (issue 32, items 8–12), at phone size (390×844) against the real
// server running the real Claude Code CLI, whose model is the scripted server
// tests/fake-providers/mock_anthropic.py:
//   8. the composer keeps its text at least 200 px wide beside the model chip, and while a turn
//      runs with a message queued nothing runs past the right edge (Steer, Stop, the tray's ×);
//   9. a message sent while scrolled up comes into view, and "Jump to latest" is offered;
//  10. the notification list stays on screen, reads Markdown as text, says when, marks read on
//      open and closes with Escape;
//  11. Regenerate adds a version of the reply (‹ 1/2 ›, across a reload), never a second owner
//      message, and is not offered under a handoff marker;
//  12. the install offer is one compact line, once; titles use the bar's width; the info sheet's
//      Close is at its top; /compact shows its progress; the live clock is not read out; every
//      control's name holds its label; every control is at least 44×44 px.
// The same screens at desktop width keep their layout (no overflow, names hold their labels).
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as chat.test.mjs); the Claude CLI from
// MOBIUS_CLAUDE_BIN or $MOBIUS_CLI_DIR/node_modules/.bin/claude.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  agentEnv,
  apiClient,
  ARTIFACTS,
  claudeBin,
  DESKTOP,
  horizontalOverflow,
  labelMismatches,
  openBrowser,
  PHONE,
  saveArtifact,
  screenshot,
  setupOwner,
  signInAsOwner,
  smallTargets,
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
const TOKEN_KEY = "mobius.token";
const LONG_TITLE = "Plan the vegetable garden for the spring with raised beds";

/** A command that runs for a few seconds (Claude refuses a bare `sleep`). */
const SLOW_COMMAND = "/usr/bin/python3 -c 'import time; time.sleep(6)'";

/** A long first reply (the chat scrolls), ending on a paragraph of Markdown (the notice's text). */
const LONG_REPLY = [
  "Here is the plan, bed by bed:",
  ...Array.from({ length: 24 }, (_, i) => `${i + 1}. Bed ${i + 1}: tomatoes, basil and a row of marigolds.`),
  "```sh\nmkdir -p garden && touch garden/plan.md\n```",
  "**Done.** See `garden/plan.md` and [the guide](https://example.com/guide).",
].join("\n\n");

// The model's script: the mock picks a step by how many assistant turns the request holds.
const SCRIPT = {
  steps: [
    { text: LONG_REPLY },
    { text: "Running the tests.", tool_use: { name: "Bash", input: { command: SLOW_COMMAND, description: "Run the tests" } } },
    { text: "Tests passed." },
    { text: "Queued reply." },
    { text: "Regenerated reply." },
  ],
  default: { text: "Default reply." },
  side_text: "The garden plan so far.",
};

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

/** The owner's rows in the transcript, as their text. */
const ownerRows = (page) => page.locator(".chat-content .row-user .bubble").allTextContents();

/** Fails unless `box` lies inside `outer` (both {x, y, width, height}), to half a pixel. */
function assertInside(box, outer, what) {
  assert.ok(box, `${what} is on screen`);
  const inside =
    box.x >= outer.x - 0.5 && box.y >= outer.y - 0.5 && box.x + box.width <= outer.x + outer.width + 0.5 && box.y + box.height <= outer.y + outer.height + 0.5;
  assert.ok(inside, `${what} ${JSON.stringify(box)} lies inside ${JSON.stringify(outer)}`);
}

/** Waits until `locator`'s element and its children have finished animating (a sheet rising). */
async function settled(locator) {
  await locator.evaluate((el) => Promise.all(el.getAnimations({ subtree: true }).map((a) => a.finished)));
}

/** Scrolls the conversation up by hand (a wheel, as a reader does: a script's scroll is not the reader's). */
async function scrollUp(page) {
  const box = await page.locator(".chat-scroll").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, -20_000);
  await page.waitForFunction(() => document.querySelector(".chat-scroll").scrollTop < 50);
}

/** The screen checks of items 8 and 12: nothing runs sideways, names hold labels, targets are big enough. */
async function assertScreen(page, view, { within = "body" } = {}) {
  assert.deepEqual(await horizontalOverflow(page, { within }), [], `${view}: nothing runs past the edge`);
  assert.deepEqual(await labelMismatches(page), [], `${view}: every control's name holds its visible label`);
  assert.deepEqual(await smallTargets(page, { within }), [], `${view}: every control is at least 44×44 px`);
}

let mock;
let server;
let phone;
let problems = [];
let chatUrl;
let ownerToken;
const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "phone-ux", timeout: STEP_TIMEOUT, page: () => phone.page });

describe("the phone user's findings, fixed (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, saved.text);
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "phone-ux-server.log", browsers: [phone], mocks: [mock] }));

  step("8. the composer's text is at least 200 px wide beside the model chip", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    chatUrl = page.url();
    await composer(page).waitFor();
    const chip = page.locator(".composer-model");
    await chip.waitFor();
    const text = await composer(page).boundingBox();
    assert.ok(text && text.width >= 200, `the text box is ${text?.width} px wide`);
    assertInside(await chip.boundingBox(), await page.locator(".composer-box").boundingBox(), "the model chip");
    await assertScreen(page, "an empty chat");
    await screenshot(page, "phone-ux-composer.png");
  });

  step("12. a long title uses the top bar's width; the info sheet's Close stays at its top", async (page) => {
    const response = await send(page, LONG_TITLE);
    assert.equal(response.status(), 202);
    await page.getByText("the guide").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const title = page.locator(".topbar-title-text");
    await title.getByText(/^Plan the vegetable/).waitFor();
    const bar = await title.evaluate((el) => ({ width: el.getBoundingClientRect().width, cut: el.scrollWidth > el.clientWidth, chars: el.textContent.length }));
    assert.ok(bar.width >= 180, `the title gets ${bar.width} px of the bar`);
    assert.ok(bar.cut, "a title longer than the bar ends in an ellipsis at its edge");
    // The drawer's row: the title runs to the row's menu, inside the drawer.
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    const row = drawer.locator(".chat-row").first();
    await row.waitFor();
    await settled(drawer);
    const rowTitle = await row.locator(".chat-title").boundingBox();
    assertInside(rowTitle, await drawer.boundingBox(), "the drawer row's title");
    assert.ok(rowTitle.width >= 200, `the drawer row's title gets ${rowTitle.width} px`);
    await assertScreen(page, "the drawer", { within: ".drawer" });
    await page.goBack();
    await drawer.waitFor({ state: "detached" });

    // The title opens the chat's info sheet (its name holds the title: voice control says it).
    await page.getByRole("button", { name: /chat info$/ }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    const close = sheet.getByRole("button", { name: "Close", exact: true });
    await close.waitFor();
    await settled(sheet);
    const top = (await sheet.boundingBox()).y;
    assert.ok((await close.boundingBox()).y - top < 60, "Close is in the sheet's head");
    const scrolls = await sheet.evaluate((el) => el.scrollHeight > el.clientHeight + 40);
    assert.ok(scrolls, "the sheet is taller than the screen (or this check proves nothing)");
    await sheet.evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await page.waitForFunction(() => document.querySelector(".sheet").scrollTop > 0);
    const afterScroll = await close.boundingBox();
    assert.ok(afterScroll.y - top < 60 && afterScroll.y >= top, "Close stays at the top while the sheet scrolls");
    await screenshot(page, "phone-ux-info-sheet.png");
    await assertScreen(page, "the info sheet", { within: ".sheet" });
    await close.click();
    await sheet.waitFor({ state: "detached" });
  });

  step("9. a message sent while scrolled up comes into view; Jump to latest is offered", async (page) => {
    const scroller = page.locator(".chat-scroll");
    await scrollUp(page);
    const jump = page.getByRole("button", { name: "Jump to latest" });
    await jump.waitFor();
    await jump.click();
    await page.waitForFunction(() => {
      const box = document.querySelector(".chat-scroll");
      return box.scrollHeight - box.clientHeight - box.scrollTop < 40;
    });
    await jump.waitFor({ state: "detached" });
    // Away from the end again, then send: the new message is on screen.
    await scrollUp(page);
    await jump.waitFor();
    const response = await send(page, "Run the tests");
    assert.equal(response.status(), 202);
    const bubble = page.locator(".row-user .bubble", { hasText: "Run the tests" });
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll(".row-user .bubble")].filter((b) => b.textContent === "Run the tests");
      const box = document.querySelector(".chat-scroll").getBoundingClientRect();
      const r = rows[0]?.getBoundingClientRect();
      return r !== undefined && r.top >= box.top && r.bottom <= box.bottom;
    });
    assertInside(await bubble.boundingBox(), await scroller.boundingBox(), "the message just sent");
  });

  step("8. while a turn runs with a message queued, nothing runs past the right edge; 12. the clock is not read out", async (page) => {
    await liveRow(page).locator(".working-what").getByText(/^Running `/).waitFor({ timeout: TURN_TIMEOUT });
    const queued = await send(page, "Then tell me how many beds are left, and which ones still need seeds");
    assert.equal((await queued.json()).status, "queued");
    const tray = page.getByRole("region", { name: "Queued messages" });
    await tray.getByText(/^Then tell me/).waitFor();
    const steer = page.getByRole("button", { name: "Steer", exact: true });
    await steer.waitFor();
    const box = await page.locator(".composer-box").boundingBox();
    const screen = { x: 0, y: 0, width: 390, height: 844 };
    assertInside(box, screen, "the composer");
    assertInside(await steer.boundingBox(), box, "Steer");
    assertInside(await stopButton(page).boundingBox(), box, "Stop");
    assertInside(await tray.getByRole("button", { name: "Remove queued message" }).boundingBox(), screen, "the queued row's ×");
    const text = await composer(page).boundingBox();
    assert.ok(text.width >= 200, `the text box is ${text.width} px wide during the turn`);
    await assertScreen(page, "a running turn with a queued message");
    // The elapsed time is not in a live region; the start of the turn was announced once.
    const clock = await liveRow(page).locator(".working-time").evaluate((el) => ({
      live: el.closest("[aria-live], [role=status], [role=log], [role=alert]") !== null,
      hidden: el.getAttribute("aria-hidden"),
    }));
    assert.deepEqual(clock, { live: false, hidden: "true" });
    const announcer = page.locator('.chat > [role="status"][aria-live="polite"]');
    assert.equal(await announcer.textContent(), "The agent is working.");
    await screenshot(page, "phone-ux-running-queue.png");
    await page.getByText("Queued reply.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    assert.equal(await announcer.textContent(), "The agent replied.");
  });

  step("11. Regenerate adds a version of the reply, never a second owner message, and keeps it across a reload", async (page) => {
    const before = await ownerRows(page);
    const posted = page.waitForRequest((r) => r.url().endsWith("/regenerate") && r.method() === "POST");
    await page.getByRole("button", { name: "Regenerate reply" }).click();
    const body = (await posted).postDataJSON();
    assert.equal(body.versions, 1);
    await page.getByText("Regenerated reply.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    assert.deepEqual(await ownerRows(page), before, "the owner's messages are as they were");
    assert.equal(await page.getByText("Queued reply.").count(), 0, "one version shows at a time");
    const versions = page.getByRole("group", { name: "Versions of this reply" });
    assert.match(await versions.textContent(), /2\/2/);
    await versions.getByRole("button", { name: "Previous version" }).click();
    await page.getByText("Queued reply.").waitFor();
    assert.equal(await page.getByText("Regenerated reply.").count(), 0);
    assert.match(await versions.textContent(), /1\/2/);
    await screenshot(page, "phone-ux-versions.png");
    await assertScreen(page, "a reply with versions");
    // Kept by the server: a reload shows the newest version with its switcher.
    await page.reload();
    await page.getByText("Regenerated reply.").waitFor();
    assert.match(await page.getByRole("group", { name: "Versions of this reply" }).textContent(), /2\/2/);
    assert.deepEqual(await ownerRows(page), before);
  });

  step("12. /compact shows its progress while the summary is written; no Regenerate under the marker", async (page) => {
    await composer(page).fill("/compact");
    const compacted = page.waitForResponse((r) => r.url().endsWith("/compact") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const progress = page.locator(".row-progress");
    await progress.getByText("Compacting: summarising the conversation").waitFor();
    assert.match(await progress.locator(".working-time").textContent(), /^\d+ s$/);
    assert.equal(await composer(page).getAttribute("placeholder"), "Compacting the conversation…");
    assert.equal((await compacted).status(), 200);
    await progress.waitFor({ state: "detached" });
    await page.locator(".handoff-block").waitFor();
    assert.equal(await page.getByRole("button", { name: "Regenerate reply" }).count(), 0, "not under a handoff marker");
  });

  step("10. the notification list stays on screen, reads as text, says when, marks read on open and closes on Escape", async (page) => {
    // A turn in another chat, unwatched: its notice waits unread.
    const other = "0f0f0f0f-0000-4000-8000-000000000001";
    assert.ok((await api("/api/chats", { method: "POST", body: { id: other } })).status < 300);
    const sent = await api(`/api/chats/${other}/messages`, { method: "POST", body: { content: "Plan the herbs", cid: "herbs-1" } });
    assert.equal(sent.status, 202, sent.text);
    const bell = page.getByRole("button", { name: /^Notifications, 1 unread$/ });
    await bell.waitFor({ timeout: TURN_TIMEOUT });
    await bell.click();
    const panel = page.getByRole("dialog", { name: "Notifications" });
    const item = panel.locator(".bell-item").first();
    await item.waitFor();
    assertInside(await panel.boundingBox(), { x: 0, y: 0, width: 390, height: 844 }, "the notification list");
    assert.equal(await item.locator(".bell-item-body").textContent(), "Done. See garden/plan.md and the guide.");
    assert.match(await item.locator("time").textContent(), /^(now|\d+ min ago)$/);
    assert.ok(await item.locator("time").getAttribute("datetime"));
    assert.notEqual(await item.getAttribute("data-unread"), null, "marked new while the list shows");
    await page.getByRole("button", { name: "Notifications", exact: true }).waitFor();
    await screenshot(page, "phone-ux-notifications.png");
    await assertScreen(page, "the notification list", { within: ".bell-panel" });
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "detached" });
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "Notifications", "focus is back on the bell");
    const unread = await api("/api/notifications/unread-count");
    assert.equal(unread.json.count, 0);
  });

  step("12. the screens' controls hold their labels in their names and are at least 44 px: Settings, Apps", async (page) => {
    await page.getByRole("button", { name: "Open chats" }).click();
    await page.getByRole("dialog", { name: "Chats" }).getByRole("button", { name: "Settings" }).click();
    await page.getByRole("navigation", { name: "Settings sections" }).waitFor();
    await assertScreen(page, "the Settings list");
    await page.getByRole("navigation", { name: "Settings sections" }).getByRole("button", { name: /^Agents/ }).click();
    await page.getByRole("article", { name: "Claude Code" }).waitFor();
    await assertScreen(page, "Settings › Agents");
    assert.equal(await page.getByRole("region", { name: "Install Möbius" }).count(), 0, "no install offer outside the chat");
    await page.goto(`${server.origin}/apps`);
    await page.getByRole("tab", { name: "Installed" }).waitFor();
    await assertScreen(page, "Apps");
    await page.goto(chatUrl);
    await page.getByText("Regenerated reply.").waitFor();
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });

  test("12. the install offer is one compact line, shown in one session only", { timeout: STEP_TIMEOUT }, async () => {
    const iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
    const browser = await openBrowser({ ...PHONE, userAgent: iphone });
    try {
      const page = browser.page;
      await page.goto(server.origin + "/");
      await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, ownerToken]);
      await page.goto(chatUrl);
      const offer = page.getByRole("region", { name: "Install Möbius" });
      await offer.waitFor();
      const box = await offer.boundingBox();
      assert.ok(box.height <= 56, `the offer is ${box.height} px tall`);
      assert.deepEqual(await smallTargets(page, { within: ".install-offer" }), []);
      await screenshot(page, "phone-ux-install-offer.png");
      // A reload in the same session keeps it until it is answered…
      await page.reload();
      await offer.waitFor();
      // …but a later session (a new tab, the app opened again) does not show it again.
      const later = await browser.context.newPage();
      await later.goto(chatUrl);
      await later.getByText("Regenerated reply.").waitFor();
      assert.equal(await later.getByRole("region", { name: "Install Möbius" }).count(), 0, "offered once");
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-phone-ux-install-offer.png", await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  });

  test("at desktop width the same chat keeps its layout: nothing overflows, names hold labels, versions show", { timeout: STEP_TIMEOUT }, async () => {
    const browser = await openBrowser(DESKTOP);
    try {
      const page = browser.page;
      await page.goto(server.origin + "/");
      await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, ownerToken]);
      await page.goto(chatUrl);
      await page.getByText("Regenerated reply.").waitFor();
      assert.deepEqual(await horizontalOverflow(page), []);
      assert.deepEqual(await labelMismatches(page), []);
      const text = await composer(page).boundingBox();
      assert.ok(text.width >= 600, `the text box is ${text.width} px wide on a desktop`);
      assert.match(await page.getByRole("group", { name: "Versions of this reply" }).textContent(), /2\/2/);
      // The account menu stays in the bar on a wide screen; the title still opens the info sheet.
      await page.getByRole("button", { name: /^Account menu for/ }).waitFor();
      await page.getByRole("button", { name: /chat info$/ }).click();
      await page.getByRole("dialog", { name: "Chat info" }).waitFor();
      await page.keyboard.press("Escape");
      await page.getByRole("button", { name: /^Notifications/ }).click();
      const panel = page.getByRole("dialog", { name: "Notifications" });
      await panel.waitFor();
      assertInside(await panel.boundingBox(), { x: 0, y: 0, width: 1280, height: 800 }, "the notification list");
      await screenshot(page, "phone-ux-desktop.png");
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-phone-ux-desktop.png", await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  });
});
