// The platform's theme against the real server: the real Claude Code CLI, driven by the scripted
// model, writes theme/theme.css and runs `mobius theme apply`; the open shell and the open app
// frame restyle without a reload. A theme that reaches another origin is refused and the page
// keeps the good one; Settings › Appearance resets to stock and goes back to the agent's version;
// /recovery (built into the server) signs in and resets a theme that made the shell unreadable.
//
// Environment: as apps.test.mjs (MOBIUS_BIN, MOBIUS_FRONTEND_DIR, the Claude CLI, the app
// build's node_modules).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
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
  screenshot,
  send,
  setupOwner,
  signInAsOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  turnEnds,
  watchProblems,
} from "./harness.mjs";

const GREEN = "#15803d";
const STOCK_LIGHT_ACCENT = "#4f46e5";
const FOREST = `/* Forest */\n:root {\n  --light-accent: ${GREEN};\n  --dark-accent: #22c55e;\n  --light-bg: #f7f5ef;\n}\n`;

const SCRIPT = {
  steps: [
    // The stock theme is already there: Claude Code writes over a file only once it has read it.
    { text: "I'll make it green.", tool_use: { name: "Read", input: { file_path: "{cwd}/theme/theme.css" } } },
    { tool_use: { name: "Write", input: { file_path: "{cwd}/theme/theme.css", content: FOREST } } },
    { tool_use: { name: "Bash", input: { command: "mobius theme apply", description: "Apply the theme" } } },
    { text: "The platform is green now." },
  ],
  default: { text: "Nothing more to do." },
};

const SWATCH_MANIFEST = { id: "swatch", name: "Swatch", version: "1.0.0", description: "Shows the accent.", entry: "index.jsx" };
const SWATCH_JSX = `export default function Swatch() {
  return <button type="button" style={{ background: "var(--accent)", color: "var(--accent-fg)" }}>Accent</button>;
}
`;

if (!process.env.MOBIUS_BIN || !process.env.MOBIUS_FRONTEND_DIR) throw new Error("MOBIUS_BIN, MOBIUS_FRONTEND_DIR not set (run scripts/test)");
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

let mock;
let server;
let desktop;
let token;
let swatchId;
let problems = [];

const api = apiClient(() => server.origin, () => token);
const step = stepper({ prefix: "theme", timeout: 120_000, page: () => desktop.page });

/** The shell's painted accent (the light scheme is on). */
const accent = (page) => page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim());
/** The app frame's `--accent`, as the frame sees it. */
async function frameAccent(page) {
  const frame = page.frames().find((f) => f !== page.mainFrame() && f.url().includes(`/api/apps/${swatchId}/frame`));
  if (!frame) return null;
  return frame.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim()).catch(() => null);
}

describe("the platform's theme (real CLI, live restyle)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    token = await setupOwner(server.origin);
    const dir = join(server.dataDir, "apps", "swatch");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "mobius.json"), JSON.stringify(SWATCH_MANIFEST));
    await writeFile(join(dir, "index.jsx"), SWATCH_JSX);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "swatch" } });
    assert.equal(applied.status, 200, applied.text);
    swatchId = applied.json.app.id;
    const connected = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(connected.status, 200, `connect Claude: ${connected.text}`);
    desktop = await openBrowser({ ...DESKTOP, colorScheme: "light" });
    problems = watchProblems(desktop.page);
  });

  after(() => tearDown({ server, log: "theme-server.log", browsers: [desktop], mocks: [mock] }));

  step("the agent's theme restyles the open shell and app frame without a reload", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    await page.goto(`${page.url()}?app=${swatchId}`);
    await eventually("the app frame is painted with the stock accent", async () => (await frameAccent(page)) === STOCK_LIGHT_ACCENT, { timeoutMs: 30_000 });
    assert.equal(await accent(page), STOCK_LIGHT_ACCENT);
    await page.evaluate(() => (window.__sameDocument = true));

    await send(page, "Make the platform green");
    await turnEnds(page);
    await eventually("the shell restyles", async () => (await accent(page)) === GREEN);
    await eventually("the app frame restyles", async () => (await frameAccent(page)) === GREEN);
    assert.equal(await page.evaluate(() => window.__sameDocument), true, "no reload");
    const chrome = await page.evaluate(() => [...document.querySelectorAll('meta[name="theme-color"]')].map((m) => m.content));
    assert.ok(chrome.includes("#f7f5ef"), `the browser chrome follows the theme: ${chrome}`);
    const live = await api("/api/theme");
    assert.equal(live.json.css, FOREST);
    await screenshot(page, "theme-forest-desktop.png");
    // The CLI's output reached the model: the apply printed the new version.
    const requests = await mock.requests();
    assert.ok(JSON.stringify(requests).includes(live.json.version), "the model saw the applied version");
  });

  step("a theme reaching another origin is refused and the page keeps the good one", async (page) => {
    await writeFile(join(server.dataDir, "theme", "theme.css"), "@import url(https://evil.example/x.css);\n:root { --light-accent: red }\n");
    const refused = await api("/api/theme/apply", { method: "POST", body: {} });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.json.code, "theme_invalid");
    assert.match(refused.json.message, /line 1, column 1: @import is not allowed/);
    assert.equal((await api("/api/theme")).json.css, FOREST);
    assert.equal(await accent(page), GREEN);
  });

  step("Settings › Appearance resets to stock and goes back to the agent's version", async (page) => {
    await page.goto(`${server.origin}/settings/appearance`);
    await page.getByRole("button", { name: "Reset to stock" }).click();
    await eventually("stock again", async () => (await accent(page)) === STOCK_LIGHT_ACCENT);
    const versions = page.getByRole("list", { name: "Theme versions" });
    await versions.getByText("Stock").waitFor();
    await screenshot(page, "theme-settings-desktop.png");
    await versions.getByRole("listitem").filter({ hasText: "By the agent" }).getByRole("button", { name: /^Use the theme/ }).click();
    await eventually("green again", async () => (await accent(page)) === GREEN);
    assert.deepEqual(problems, []);
  });

  step("/recovery, the server's own page, puts back a theme that hides the shell", async (page) => {
    // Text the colour of the page: the shell is unreadable.
    await writeFile(join(server.dataDir, "theme", "theme.css"), ":root { --light-text: #f6f6f3; --light-muted: #f6f6f3; --light-accent: #f6f6f3; }\n");
    assert.equal((await api("/api/theme/apply", { method: "POST", body: {} })).status, 200);
    await eventually("the shell is unreadable", async () => (await accent(page)) === "#f6f6f3");
    await page.goto(`${server.origin}/recovery`);
    await page.getByRole("heading", { name: "Möbius recovery" }).waitFor();
    assert.equal(await page.locator("#mobius-theme").count(), 0, "the recovery page loads no theme");
    await page.getByLabel("Username").fill(OWNER.username);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("A custom theme is on").waitFor();
    await screenshot(page, "theme-recovery-desktop.png");
    await page.getByRole("button", { name: "Reset the theme to stock" }).click();
    await page.getByText("The stock theme is on.").waitFor();
    assert.equal((await api("/api/theme")).json.stock, true);
    await page.getByRole("link", { name: "Open Möbius" }).click();
    await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
    await eventually("the shell is stock again", async () => (await accent(page)) === STOCK_LIGHT_ACCENT);
  });
});
