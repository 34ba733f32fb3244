// The shell's own source against the real server: the real Claude Code CLI, driven by the
// scripted model, changes a label in DATA_DIR/platform/shell/ and runs `mobius shell rebuild`;
// the open shell offers a reload and, reloaded, shows the new label (and reports itself ready).
// A broken edit keeps the shell served; a shell that throws at start is rolled back by the
// server on its own; /recovery goes back to the stock shell; Settings › Appearance lists the
// versions and switches back to one.
//
// Environment: as theme.test.mjs, plus the shell's source and toolchain (this checkout's
// frontend/ and frontend/node_modules).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  agentEnv,
  apiClient,
  claudeBin,
  DESKTOP,
  eventually,
  openBrowser,
  OWNER,
  REPO,
  screenshot,
  send,
  setupOwner,
  signInAsOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  turnEnds,
} from "./harness.mjs";

const DRAWER = "src/components/shell/Drawer.tsx";
const SCRIPT = {
  steps: [
    {
      text: "I'll rename the button.",
      tool_use: {
        name: "Bash",
        input: {
          command: `sed -i 's|<span>New chat</span>|<span>Fresh chat</span>|' "$MOBIUS_DATA_DIR/platform/shell/${DRAWER}" && "$MOBIUS_BIN" shell rebuild`,
          description: "Rename the label and rebuild the shell",
          timeout: 600000,
        },
      },
    },
    { text: "The button says Fresh chat now: reload to see it." },
  ],
  default: { text: "Nothing more to do." },
};

if (!process.env.MOBIUS_BIN || !process.env.MOBIUS_FRONTEND_DIR) throw new Error("MOBIUS_BIN, MOBIUS_FRONTEND_DIR not set (run scripts/test)");
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

let mock;
let server;
let desktop;
let token;

const api = apiClient(() => server.origin, () => token);
// Each step may run a full build of the shell on a loaded machine.
const step = stepper({ prefix: "shell", timeout: 600_000, page: () => desktop.page });
const source = (file) => join(server.dataDir, "platform", "shell", file);
/** The drawer's New chat button, labelled `label`. */
const newChat = (page, label) => page.locator("button.new-chat", { hasText: label });
const shellState = async () => (await api("/api/shell")).json;
/**
 * Reloads `page`. A new build's service worker, once installed, reloads the page by itself
 * (`pwa/register.ts`); a reload racing it is aborted, and the page it loads is as fresh.
 */
const reload = (page) => page.reload().catch(() => page.waitForLoadState("load"));

describe("the shell's own source (real CLI, rebuild, rollback)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer({
      ...agentEnv(mock.url),
      MOBIUS_SHELL_SOURCE: join(REPO, "frontend"),
      MOBIUS_SHELL_NODE_MODULES: join(REPO, "frontend", "node_modules"),
      MOBIUS_SHELL_READY_SECS: "10",
      // The steps rebuild when they mean to (and count the builds): no watcher.
      MOBIUS_SHELL_WATCH_MS: "0",
    });
    token = await setupOwner(server.origin);
    const connected = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(connected.status, 200, `connect Claude: ${connected.text}`);
    desktop = await openBrowser({ ...DESKTOP, colorScheme: "light" });
  });

  after(() => tearDown({ server, log: "shell-server.log", browsers: [desktop], mocks: [mock] }));

  step("the agent changes a label and rebuilds; the reloaded shell shows it", async (page) => {
    // Seeded after the server is ready, off the boot path.
    await eventually("the source is seeded as a git repository", () => existsSync(source(".git/HEAD")));
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    await newChat(page, "New chat").waitFor();

    await send(page, "Call the New chat button Fresh chat");
    await turnEnds(page);
    const reload = page.getByRole("button", { name: "Reload to get the new version" });
    await reload.waitFor({ timeout: 60_000 });
    await screenshot(page, "shell-reload-offer-desktop.png");
    await reload.click();
    await newChat(page, "Fresh chat").waitFor({ timeout: 60_000 });
    const served = await shellState();
    assert.equal(served.serving, 1, JSON.stringify(served));
    await eventually("the new shell reported itself ready", async () => (await shellState()).builds[0].confirmed === true);
  });

  step("a broken edit never reaches a device: the build's errors come back, the shell stays", async (page) => {
    const drawer = await readFile(source(DRAWER), "utf8");
    await writeFile(source(DRAWER), drawer.replace("<span>Fresh chat</span>", "<span>Fresh chat</span"));
    const refused = await api("/api/shell/rebuild", { method: "POST", body: {} });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.json.code, "shell_build_failed");
    assert.match(refused.json.message, /Drawer\.tsx/);
    await reload(page);
    await newChat(page, "Fresh chat").waitFor();
    assert.equal((await shellState()).serving, 1);
    await writeFile(source(DRAWER), drawer);
  });

  step("a shell that throws at start is rolled back by the server on its own", async (page) => {
    const main = await readFile(source("src/main.tsx"), "utf8");
    await writeFile(source("src/main.tsx"), `throw new Error("broken at start");\n${main}`);
    const rebuilt = await api("/api/shell/rebuild", { method: "POST", body: {} });
    assert.equal(rebuilt.status, 200, rebuilt.text);
    assert.equal(rebuilt.json.build.n, 2);
    await reload(page);
    await eventually("the broken build is rolled back", async () => (await shellState()).serving === 1, { timeoutMs: 60_000 });
    const state = await shellState();
    assert.match(state.builds.find((b) => b.n === 2).failed, /did not start/);
    await reload(page);
    await newChat(page, "Fresh chat").waitFor({ timeout: 60_000 });
    await writeFile(source("src/main.tsx"), main);
  });

  step("/recovery goes back to the stock shell", async (shellPage) => {
    // A page of its own: the shell's page may be reloading into the new service worker.
    const page = await shellPage.context().newPage();
    await page.goto(`${server.origin}/recovery`);
    await page.getByLabel("Username").fill(OWNER.username);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("The agent's build 1 is on.").waitFor();
    await screenshot(page, "shell-recovery-desktop.png");
    await page.getByRole("button", { name: "Use the stock screens" }).click();
    await page.getByText("The stock screens are on.").waitFor();
    await page.getByRole("link", { name: "Open Möbius" }).click();
    await newChat(page, "New chat").waitFor({ timeout: 60_000 });
    await page.close();
  });

  step("Settings › Appearance lists the versions and switches to one", async (shellPage) => {
    const page = await shellPage.context().newPage();
    await page.goto(`${server.origin}/settings/appearance`);
    const list = page.getByRole("list", { name: "Shell versions" });
    await list.waitFor({ timeout: 60_000 });
    const rows = list.getByRole("listitem");
    assert.deepEqual(await rows.evaluateAll((items) => items.map((i) => i.getAttribute("data-build"))), ["2", "1"]);
    assert.match(await rows.nth(0).innerText(), /rolled back/);
    assert.match(await rows.nth(1).innerText(), /from a chat/, "build 1 came from the agent's chat");
    assert.equal(await page.getByRole("button", { name: "Stock screens on" }).isDisabled(), true);
    await screenshot(page, "shell-settings-versions-desktop.png");
    await page.getByRole("button", { name: "Switch to build 1" }).click();
    await eventually("build 1 is served again", async () => (await shellState()).serving === 1);
    await list.locator('[data-build="1"][data-current]').waitFor();
    await page.goto(`${server.origin}/`);
    await newChat(page, "Fresh chat").waitFor({ timeout: 60_000 });
    await page.close();
  });
});
