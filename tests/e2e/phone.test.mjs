// The chat on a phone, every day (issue 18), at phone size (390×844) against the real server
// running the real Claude Code CLI, whose model is the scripted server
// tests/fake-providers/mock_anthropic.py:
//   - a first visit shows "No chats yet" beside an empty drawer, and the offer to install;
//   - Settings reads like a phone's (sections, Back, Done), says where to get a key, and refuses a
//     wrong key with the provider's reason;
//   - Copy on a reply and on a code block, selectable text, Edit and resend, Regenerate (a version);
//   - the chat's own model and approval policy in its info sheet (the next turn uses the model);
//   - the CLI's retries shown as they happen, and the live row saying what runs, for how long,
//     without a request of its own;
//   - a turn stopped before replying keeps its row across a reload;
//   - the offline note clears on the first probes after the network returns;
//   - the drawer's apps keep their order when one is opened; a standalone app page is dressed
//     as the app for the home screen;
//   - a refused key ends the turn with one error card and its fix (a server of its own).
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as chat.test.mjs); the Claude CLI from
// MOBIUS_CLAUDE_BIN or $MOBIUS_CLI_DIR/node_modules/.bin/claude.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  accessibilityProblems,
  agentEnv,
  apiClient,
  ARTIFACTS,
  assertFitsAndLegible,
  claudeBin,
  openBrowser,
  OWNER,
  PHONE,
  saveArtifact,
  screenshot,
  setupOwner,
  signInAsOwner,
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

/** A command that runs for a few seconds (Claude refuses a bare `sleep`). */
const SLOW_COMMAND = "/usr/bin/python3 -c 'import time; time.sleep(5)'";

// The model's script: the mock picks a step by how many assistant turns the request holds.
const SCRIPT = {
  refused_keys: ["sk-ant-wrong"],
  steps: [
    { text: "Here is a snippet:\n\n```js\nconsole.log(\"copied\");\n```\n\nRun it with node." },
    { text: "Another snippet, as asked." },
    { text: "Regenerated: here it is again." },
    // Overloaded twice, then it answers: the CLI retries, and the live row says so.
    { error: { status: 529, type: "overloaded_error", message: "Overloaded" }, error_times: 2, text: "The service answered after a retry." },
    { text: "Running the tests.", tool_use: { name: "Bash", input: { command: SLOW_COMMAND, description: "Run the tests" } } },
    { text: "Tests passed." },
    { text: "Too late.", delay_s: 40 },
  ],
  default: { text: "Default reply." },
};

const REFUSED = { error: { status: 401, type: "authentication_error", message: "invalid x-api-key" } };
const REFUSED_SCRIPT = { steps: [REFUSED], default: REFUSED };

const APP_JSX = (label) => `export default function App() { return <p>${label}</p>; }\n`;
const ALPHA = { id: "alpha", name: "Alpha", version: "1.0.0", description: "The first app.", entry: "index.jsx", theme_color: "#b45309", background_color: "#fef3c7" };
const BETA = { id: "beta", name: "Beta", version: "1.0.0", description: "The second app.", entry: "index.jsx", theme_color: "#0f766e" };

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

async function assertAccessible(page, view) {
  await assertFitsAndLegible(page, view);
  assert.deepEqual(await accessibilityProblems(page), [], `axe found serious/critical problems on ${view}`);
}

/** The transcript's rows in order, "user: …" or "assistant: …". */
async function transcript(page) {
  return page.locator(".chat-content .row").evaluateAll((rows) =>
    rows.map((row) => `${row.classList.contains("row-user") ? "user" : "assistant"}: ${row.textContent?.replace(/\s+/g, " ").trim()}`),
  );
}

let mock;
let server;
let phone;
let problems = [];
let chatUrl;
let ownerToken;
const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "phone", timeout: STEP_TIMEOUT, page: () => phone.page });

describe("the chat on a phone, every day (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    phone = await openBrowser(PHONE);
    await phone.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.origin });
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "phone-server.log", browsers: [phone], mocks: [mock] }));

  step("a first visit says “No chats yet” beside a drawer that lists no chat", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    chatUrl = page.url();
    await page.getByRole("heading", { name: "No chats yet" }).waitFor();
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    await drawer.getByText("Your chats will appear here.").waitFor();
    assert.equal(await drawer.locator(".chat-row").count(), 0, "the open empty chat is not listed");
    assert.equal(await drawer.getByRole("button", { name: "New chat" }).getAttribute("aria-current"), "page");
    await page.goBack();
    await drawer.waitFor({ state: "detached" });
  });

  step("Settings is a list of sections; Agents says where to get a key and refuses a wrong one with the provider's reason", async (page) => {
    await page.getByRole("button", { name: "Open chats" }).click();
    await page.getByRole("dialog", { name: "Chats" }).getByRole("button", { name: "Settings" }).click();
    const sections = page.getByRole("navigation", { name: "Settings sections" });
    await sections.waitFor();
    assert.equal(await page.getByLabel("Model").count(), 0, "no chat's options in global Settings");
    await screenshot(page, "phone-settings-list.png");
    await assertAccessible(page, "the Settings list");
    await sections.getByRole("button", { name: /^Agents/ }).click();
    await page.waitForURL(/\/settings\/agents$/);
    await page.locator(".topbar-title", { hasText: "Agents" }).waitFor();
    const claude = page.getByRole("article", { name: "Claude Code" });
    // Before the form opens: where a key comes from.
    const keyPage = claude.getByRole("link", { name: "Anthropic Console" });
    assert.equal(await keyPage.getAttribute("href"), "https://console.anthropic.com/settings/keys");
    await claude.getByText(/Installed · /).waitFor();
    await claude.getByRole("button", { name: "Connect Claude" }).click();
    await claude.getByLabel("Or use an API key").fill("sk-ant-wrong");
    const refused = page.waitForResponse((r) => r.url().endsWith("/api/providers/claude/api-key"));
    await claude.getByRole("button", { name: "Save key" }).click();
    assert.equal((await refused).status(), 400);
    await claude.getByRole("alert").getByText("invalid x-api-key").waitFor();
    assert.equal(await claude.locator(".provider-status").textContent(), "Not connected");
    await screenshot(page, "phone-settings-key-refused.png");
    await assertAccessible(page, "a refused key");
    await claude.getByLabel("Or use an API key").fill("sk-ant-mock");
    await claude.getByRole("button", { name: "Save key" }).click();
    await claude.getByText(/^Connected/).waitFor();
    // Back goes to the list; Done leaves Settings for the chat it was opened from.
    await page.getByRole("button", { name: "Settings", exact: true }).click();
    await page.waitForURL(/\/settings$/);
    await sections.getByText("1 connected").waitFor();
    await page.getByRole("button", { name: "Done", exact: true }).click();
    await page.waitForURL(chatUrl);
  });

  step("a reply and its code block have Copy; the text is selectable", async (page) => {
    const response = await send(page, "Show me a snippet");
    assert.equal(response.status(), 202);
    await page.getByText("Run it with node.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const reply = page.locator(".row-assistant").last();
    await reply.getByRole("button", { name: "Copy code" }).click();
    await reply.getByRole("button", { name: "Copied", exact: true }).first().waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'console.log("copied");');
    await reply.getByRole("button", { name: "Copy message" }).click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.ok(copied.startsWith("Here is a snippet:") && copied.includes("Run it with node."), copied);
    // Text is selectable by touch: no user-select: none on the conversation.
    const bubble = page.locator(".row-user .bubble", { hasText: "Show me a snippet" });
    assert.notEqual(await bubble.evaluate((el) => getComputedStyle(el).userSelect), "none");
    await bubble.dblclick();
    assert.ok((await page.evaluate(() => String(getSelection()))).length > 0, "a double tap selects words of the message");
    await screenshot(page, "phone-row-actions.png");
    await assertAccessible(page, "a reply with its actions");
  });

  step("the drawer lists the chat now, and a new chat says “New chat”, never “No chats yet”", async (page) => {
    await page.getByRole("button", { name: "New chat" }).click();
    await page.waitForURL((url) => url.href !== chatUrl);
    await page.locator(".empty-title", { hasText: "New chat" }).waitFor();
    assert.equal(await page.getByRole("heading", { name: "No chats yet" }).count(), 0);
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    await drawer.locator(".chat-row").first().waitFor();
    assert.equal(await drawer.locator(".chat-row").count(), 1);
    await drawer.locator(".chat-row").first().getByRole("button").first().click();
    await page.waitForURL(chatUrl);
    await page.getByText("Run it with node.").waitFor();
  });

  step("Edit and resend puts the last message back in the composer and sends it as a new turn", async (page) => {
    await page.getByRole("button", { name: "Edit and resend" }).click();
    assert.equal(await composer(page).inputValue(), "Show me a snippet");
    await composer(page).fill("Show me another snippet");
    const posted = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    assert.equal((await posted).request().postDataJSON().content, "Show me another snippet");
    await page.getByText("Another snippet, as asked.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    // Only the owner's last message offers Edit, only the last reply Regenerate.
    assert.equal(await page.getByRole("button", { name: "Edit and resend" }).count(), 1);
    assert.equal(await page.getByRole("button", { name: "Regenerate reply" }).count(), 1);
  });

  step("Regenerate asks for the last reply again, as a new version of it (the message is not sent twice)", async (page) => {
    const posted = page.waitForResponse((r) => r.url().endsWith("/regenerate") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Regenerate reply" }).click();
    assert.equal((await posted).status(), 202);
    await page.getByText("Regenerated: here it is again.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    assert.equal(await page.locator(".row-user .bubble", { hasText: "Show me another snippet" }).count(), 1);
    assert.match(await page.getByRole("group", { name: "Versions of this reply" }).textContent(), /2\/2/);
  });

  step("the chat's info sheet holds its model and approval policy; the next turn uses the model", async (page) => {
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    const model = sheet.getByLabel("Model");
    await sheet.getByRole("option", { name: "Claude Haiku" }).waitFor({ state: "attached" });
    await page.waitForFunction((el) => !el.disabled, await model.elementHandle());
    const patched = page.waitForResponse((r) => r.request().method() === "PATCH" && /\/api\/chats\/[^/]+$/.test(r.url()));
    await model.selectOption("haiku");
    assert.deepEqual((await patched).request().postDataJSON(), { model: "haiku" });
    assert.equal(await sheet.getByLabel("Approvals").inputValue(), "full");
    assert.ok(await sheet.evaluate((el) => el.scrollWidth <= el.clientWidth), "the sheet does not scroll sideways");
    await screenshot(page, "phone-chat-info-options.png");
    await assertAccessible(page, "the chat's info sheet");
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
  });

  step("the CLI's retries show on the live row as they happen", async (page) => {
    const before = (await mock.requests()).length;
    await send(page, "Check the service");
    await liveRow(page).getByText(/^Retrying, \d+ of \d+: /).waitFor({ timeout: TURN_TIMEOUT });
    await screenshot(page, "phone-retrying.png");
    await page.getByText("The service answered after a retry.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
    const main = (await mock.requests()).slice(before).filter((r) => r.kind === "main");
    assert.ok(main.length >= 3, `two refusals and an answer: ${main.length} requests`);
    assert.ok(main.every((r) => /haiku/.test(r.model ?? "")), `the chat's model was used: ${main.map((r) => r.model)}`);
  });

  step("while a command runs, the live row says so with an elapsed time, and ticking costs no request", async (page) => {
    await send(page, "Run the tests");
    const what = liveRow(page).locator(".working-what");
    await what.getByText(/^Running `/).waitFor({ timeout: TURN_TIMEOUT });
    const time = liveRow(page).locator(".working-time");
    const first = await time.textContent();
    const requests = [];
    const record = (r) => requests.push(r.url());
    page.on("request", record);
    // Two ticks of the clock with the command still running.
    await page.waitForFunction((t) => document.querySelector('.row[data-live="true"] .working-time')?.textContent !== t, first);
    const second = await time.textContent();
    await page.waitForFunction((t) => document.querySelector('.row[data-live="true"] .working-time')?.textContent !== t, second);
    page.off("request", record);
    assert.match(await what.textContent(), /^Running `/, "still running when the clock ticked");
    assert.match(second ?? "", /^\d+ s$/);
    // Presence reports and the drawer row's refresh after the run-started system event (once per
    // event, 150 ms after it, which a quick tool start can put inside this window) are not the clock's.
    const ticking = requests.filter((url) => !url.includes("/api/push/presence") && !/\/api\/chats\/[^/]+\/summary$/.test(url));
    assert.deepEqual(ticking, [], "the live line asked the server for nothing");
    await screenshot(page, "phone-activity.png");
    await page.getByText("Tests passed.").waitFor({ timeout: TURN_TIMEOUT });
    await turnEnds(page);
  });

  step("a turn stopped before replying keeps its row after a reload", async (page) => {
    await send(page, "Take a long pause");
    await liveRow(page).waitFor();
    await stopButton(page).click();
    await turnEnds(page);
    const stopped = page.locator(".row-assistant").last();
    await stopped.getByText("Stopped before replying.").waitFor();
    await page.reload();
    await page.getByText("Tests passed.").waitFor();
    await page.locator(".row-assistant").last().getByText("Stopped before replying.").waitFor();
    const rows = await transcript(page);
    const pause = rows.findIndex((r) => r.startsWith("user:") && r.includes("Take a long pause"));
    assert.ok(pause >= 0 && rows[pause + 1]?.startsWith("assistant:") && rows[pause + 1].includes("Stopped before replying."), JSON.stringify(rows.slice(-3)));
    for (let i = 1; i < rows.length; i++) assert.ok(!(rows[i].startsWith("user:") && rows[i - 1].startsWith("user:")), `two owner rows in a row: ${JSON.stringify(rows)}`);
  });

  step("the offline note goes on the first probes once the network returns", async (page) => {
    await phone.context.setOffline(true);
    const note = page.getByText("You're offline");
    await note.waitFor();
    const probes = [];
    const record = (r) => {
      if (r.url().endsWith("/api/health")) probes.push(r.url());
    };
    page.on("request", record);
    const back = Date.now();
    await phone.context.setOffline(false);
    await note.waitFor({ state: "detached", timeout: 30_000 });
    page.off("request", record);
    console.log(`# the offline note went ${Date.now() - back} ms after the network returned, after ${probes.length} probe(s)`);
    // Probes run at once, then 250 ms and 500 ms later: three at most is well within a second.
    assert.ok(probes.length >= 1 && probes.length <= 3, `${probes.length} health probes before the note went`);
    await page.getByRole("button", { name: "Send", exact: true }).waitFor();
  });

  step("the drawer's apps keep their order when one is opened", async (page) => {
    for (const [manifest, label] of [
      [ALPHA, "Alpha here"],
      [BETA, "Beta here"],
    ]) {
      const dir = join(server.dataDir, "apps", manifest.id);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "mobius.json"), JSON.stringify(manifest));
      await writeFile(join(dir, "index.jsx"), APP_JSX(label));
      const applied = await api("/api/apps/apply", { method: "POST", body: { slug: manifest.id } });
      assert.equal(applied.status, 200, applied.text);
    }
    await page.reload();
    await page.getByText("Tests passed.").waitFor();
    const apps = page.getByRole("dialog", { name: "Chats" }).getByRole("region", { name: "Apps" });
    await page.getByRole("button", { name: "Open chats" }).click();
    await apps.getByRole("button", { name: /^Alpha/ }).waitFor();
    const names = () => apps.locator(".chat-title").allTextContents();
    const before = await names();
    assert.deepEqual(before, ["Beta", "Alpha"], "the newest build first");
    await apps.getByRole("button", { name: /^Alpha/ }).click();
    await page.frameLocator('iframe[title="Alpha"]').getByText("Alpha here").waitFor({ timeout: 30_000 });
    await page.locator(".app-pane").getByRole("button", { name: "Back" }).click();
    await page.locator(".app-pane").waitFor({ state: "detached" });
    const listed = (await api("/api/apps")).json;
    assert.ok(listed.find((a) => a.slug === "alpha")?.last_opened_at > 0, "the server recorded the open");
    await page.getByRole("button", { name: "Open chats" }).click();
    await apps.getByRole("button", { name: /^Alpha/ }).waitFor();
    assert.deepEqual(await names(), before);
    await page.goBack();
  });

  step("a standalone app page is dressed as the app for the home screen, not as Möbius", async (page) => {
    await page.goto(`${server.origin}/apps/alpha/`);
    await page.frameLocator('iframe[title="Alpha"]').getByText("Alpha here").waitFor({ timeout: 30_000 });
    const head = await page.evaluate(() => ({
      themes: [...document.querySelectorAll('meta[name="theme-color"]')].map((m) => m.getAttribute("content")),
      title: document.querySelector('meta[name="apple-mobile-web-app-title"]')?.getAttribute("content"),
      manifest: document.querySelector('link[rel="manifest"]')?.getAttribute("href"),
      icons: [...document.querySelectorAll('link[rel="icon"], link[rel="apple-touch-icon"]')].map((l) => l.getAttribute("href")),
      documentTitle: document.title,
    }));
    assert.deepEqual(head.themes, ["#b45309"]);
    assert.equal(head.title, "Alpha");
    assert.equal(head.documentTitle, "Alpha");
    assert.equal(head.manifest, "/apps/alpha/manifest.json");
    assert.ok(head.icons.length >= 2 && head.icons.every((href) => href.startsWith("/apps/alpha/icon.png")), JSON.stringify(head.icons));
    const manifest = await page.evaluate(async () => (await fetch("/apps/alpha/manifest.json")).json());
    assert.deepEqual([manifest.name, manifest.theme_color, manifest.background_color], ["Alpha", "#b45309", "#fef3c7"]);
    const icon = await page.evaluate(async (src) => {
      const r = await fetch(src);
      return r.headers.get("content-type");
    }, head.icons[0]);
    assert.equal(icon, "image/png");
    await page.goto(chatUrl);
    await page.getByText("Tests passed.").waitFor();
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });

  // The install offer, each case in a fresh browser signed in to the same server.
  /** Signs in a fresh browser with `options`; returns it. */
  async function freshPhone(options) {
    const browser = await openBrowser(options);
    const page = browser.page;
    await page.goto(server.origin + "/");
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, ownerToken]);
    await page.goto(chatUrl);
    await page.getByText("Tests passed.").waitFor();
    return browser;
  }

  /** Counts the page's calls of the install prompt (`window.__prompted`) and notes Chromium's `beforeinstallprompt` (`window.__offered`). */
  const watchInstallPrompt = (page) =>
    page.addInitScript(() => {
      window.__prompted = 0;
      window.__offered = 0;
      window.addEventListener("beforeinstallprompt", () => (window.__offered += 1));
      if (typeof BeforeInstallPromptEvent === "function") {
        BeforeInstallPromptEvent.prototype.prompt = function prompt() {
          window.__prompted += 1;
          return Promise.resolve();
        };
      }
    });

  test("Android: Chromium's own install prompt is offered once; after Install it does not come back", { timeout: STEP_TIMEOUT }, async () => {
    const browser = await openBrowser(PHONE);
    try {
      const page = browser.page;
      await watchInstallPrompt(page);
      await page.goto(server.origin + "/");
      await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, ownerToken]);
      await page.goto(chatUrl);
      await page.getByText("Tests passed.").waitFor();
      // Chromium fires beforeinstallprompt once the service worker and the manifest make the shell installable.
      const offer = page.getByRole("region", { name: "Install Möbius" });
      await offer.waitFor({ timeout: 30_000 });
      await screenshot(page, "phone-install-offer.png");
      assert.deepEqual(await accessibilityProblems(page), []);
      await offer.getByRole("button", { name: "Install", exact: true }).click();
      await offer.waitFor({ state: "detached" });
      assert.equal(await page.evaluate(() => window.__prompted), 1, "Install showed the browser's prompt");
      await page.reload();
      await page.getByText("Tests passed.").waitFor();
      await page.waitForFunction(() => window.__offered > 0, null, { timeout: 30_000 });
      assert.equal(await offer.count(), 0, "offered once");
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-phone-install-android.png", await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  });

  test("iOS: the Share › Add to Home Screen steps, dismissed for good", { timeout: STEP_TIMEOUT }, async () => {
    const iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
    const browser = await freshPhone({ ...PHONE, userAgent: iphone });
    try {
      const page = browser.page;
      const offer = page.getByRole("region", { name: "Install Möbius" });
      await offer.getByRole("button", { name: "How" }).click();
      await offer.getByText("Add to Home Screen").waitFor();
      await screenshot(page, "phone-install-ios.png");
      await offer.getByRole("button", { name: "Dismiss the install offer" }).click();
      await offer.waitFor({ state: "detached" });
      await page.reload();
      await page.getByText("Tests passed.").waitFor();
      assert.equal(await offer.count(), 0, "dismissed for good");
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-phone-install-ios.png", await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  });
});

describe("a refused key during a turn (real Claude Code, a model that refuses the key)", () => {
  let refusingMock;
  let refusingServer;

  before(async () => {
    refusingMock = await startMockAnthropic(REFUSED_SCRIPT);
    refusingServer = await startTestServer(agentEnv(refusingMock.url));
    const token = await setupOwner(refusingServer.origin);
    // The key passed its check when it was saved (the models list answers); it is refused later.
    const saved = await fetch(`${refusingServer.origin}/api/providers/claude/api-key`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ api_key: "sk-ant-revoked" }),
    });
    assert.ok(saved.ok, `saving the key: ${saved.status}`);
  });

  after(() => tearDown({ server: refusingServer, log: "phone-refused-server.log", mocks: [refusingMock] }));

  test("the turn ends with one error card whose button opens the provider's settings, and no Retry", { timeout: STEP_TIMEOUT }, async () => {
    const browser = await openBrowser(PHONE);
    const pageProblems = watchProblems(browser.page);
    try {
      const page = browser.page;
      await page.goto(refusingServer.origin + "/");
      await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
      await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
      const sent = Date.now();
      await send(page, "hello");
      const card = page.locator(".error-block");
      const fix = card.getByRole("button", { name: "Open provider settings" });
      await fix.waitFor({ timeout: TURN_TIMEOUT });
      console.log(`# the error card showed ${Date.now() - sent} ms after Send (the issue asks for under 5 s)`);
      await turnEnds(page);
      assert.equal(await card.count(), 1, "one error card, not one per retry");
      assert.match(await card.textContent(), /refused the API key/);
      assert.equal(await page.getByRole("button", { name: "Retry", exact: true }).count(), 0, "no Retry where a retry cannot help");
      const main = (await refusingMock.requests()).filter((r) => r.kind === "main");
      assert.ok(main.length <= 2, `the CLI kept retrying a refused key: ${main.length} requests`);
      await screenshot(page, "phone-key-refused-card.png");
      await assertAccessible(page, "the refused-key card");
      await fix.click();
      await page.waitForURL(/\/settings\/agents$/);
      await page.getByRole("article", { name: "Claude Code" }).waitFor();
      assert.deepEqual(pageProblems, []);
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-phone-refused-key.png", await browser.page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await browser.close();
    }
  });
});
