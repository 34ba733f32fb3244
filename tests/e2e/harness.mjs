// Test harness for the browser journey: starts the real server on a free port with a fresh
// DATA_DIR, and opens Debian's Chromium with a fresh profile. Both clean up after themselves.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
/** The repository root (tests/e2e/../..). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Screenshots, failure shots and server logs (tests/artifacts, git-ignored). */
export const ARTIFACTS = join(REPO, "tests", "artifacts");
/** The two device profiles every suite uses. */
export const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
export const DESKTOP = { viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 };
/** The owner account the suites create. */
export const OWNER = { username: "owner", password: "correct horse battery" };
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** The Chromium version the browser suites last passed with (update it when they pass on a new one). */
const LAST_GREEN_FILE = join(REPO, "tests", "e2e", "chromium-last-green.txt");
const READY_TIMEOUT_MS = 30_000;
const MAX_LOG_CHARS = 200_000;

/** How often `eventually` looks again. */
const EVENTUALLY_INTERVAL_MS = 100;
/** How long `eventually` waits by default. */
export const EVENTUALLY_TIMEOUT_MS = 15_000;

/**
 * Waits for something the test can observe: calls `check()` (sync or async) at once and then
 * every 100 ms until it returns a truthy value, which it returns. Past `timeoutMs` it fails,
 * naming `what` and the last value seen. An exception from `check` fails at once (catch in the
 * check what may throw while the state settles). The one polling loop of the browser suites:
 * where Playwright can wait itself (`locator.waitFor`, `page.waitForFunction`), let it.
 */
export async function eventually(what, check, { timeoutMs = EVENTUALLY_TIMEOUT_MS } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) {
      let last;
      try {
        last = JSON.stringify(value);
      } catch {
        last = String(value);
      }
      throw new assert.AssertionError({ message: `${what}: not within ${timeoutMs} ms (last: ${last})` });
    }
    await new Promise((resolve) => setTimeout(resolve, EVENTUALLY_INTERVAL_MS));
  }
}

/** Reads a required environment variable or explains what is missing. */
export function requireEnv(name, hint) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: ${hint}`);
  return value;
}

async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/**
 * What the server needs to compile mini-apps: the pinned libraries and the runtime modules of the
 * frontend (the server's own defaults are relative to its working directory).
 */
export function appBuildEnv() {
  return {
    MOBIUS_APP_NODE_MODULES: process.env.MOBIUS_APP_NODE_MODULES ?? join(REPO, "frontend", "node_modules"),
    MOBIUS_APP_RUNTIME_DIR: process.env.MOBIUS_APP_RUNTIME_DIR ?? join(REPO, "frontend", "public"),
  };
}

/**
 * Starts `bin` with a fresh temp DATA_DIR on 127.0.0.1:<free port> and waits for /api/ready.
 * Returns { origin, dataDir, logs(), stop() }; stop() ends the process and deletes the DATA_DIR.
 */
export async function startServer({ bin, frontendDir, env = {} }) {
  if (!existsSync(bin)) throw new Error(`MOBIUS_BIN=${bin} does not exist`);
  if (!existsSync(join(frontendDir, "index.html"))) {
    throw new Error(`MOBIUS_FRONTEND_DIR=${frontendDir} has no index.html: build the frontend first`);
  }
  const dataDir = await mkdtemp(join(tmpdir(), "mobius-e2e-data-"));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  let output = "";
  const child = spawn(bin, [], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      MOBIUS_BIND: `127.0.0.1:${port}`,
      MOBIUS_FRONTEND_DIR: frontendDir,
      MOBIUS_LOG: process.env.MOBIUS_LOG ?? "info",
      ...appBuildEnv(),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const record = (chunk) => {
    output = (output + chunk.toString()).slice(-MAX_LOG_CHARS);
  };
  child.stdout.on("data", record);
  child.stderr.on("data", record);
  let exited = null;
  child.once("exit", (code, signal) => {
    exited = { code, signal };
  });

  const stop = async () => {
    if (exited === null) {
      const done = once(child, "exit");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await done;
      clearTimeout(timer);
    }
    await rm(dataDir, { recursive: true, force: true });
  };

  // Each probe is a real request answered by the server.
  const ready = async () => {
    if (exited !== null) throw new Error(`server exited early (${JSON.stringify(exited)}):\n${output}`);
    try {
      const response = await fetch(`${origin}/api/ready`, { signal: AbortSignal.timeout(2_000) });
      return response.ok && (await response.json()).ready === true;
    } catch {
      return false; // Not listening yet.
    }
  };
  try {
    await eventually("the server answers /api/ready", ready, { timeoutMs: READY_TIMEOUT_MS });
  } catch (error) {
    await stop();
    throw exited === null ? new Error(`${error.message}:\n${output}`) : error;
  }
  return { origin, dataDir, logs: () => output, stop };
}

/**
 * The server under test: the binary and built frontend named by MOBIUS_BIN and
 * MOBIUS_FRONTEND_DIR (scripts/test sets both), with extra environment `env`.
 */
export function startTestServer(env = {}) {
  return startServer({
    bin: requireEnv("MOBIUS_BIN", "point it at the mobius server binary"),
    frontendDir: resolve(requireEnv("MOBIUS_FRONTEND_DIR", "point it at the built frontend (frontend/dist)")),
    env,
  });
}

/** Creates the owner account (OWNER) on a fresh server; returns the owner's access token. */
export async function setupOwner(origin) {
  const response = await fetch(`${origin}/api/auth/setup`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(OWNER),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `owner setup: ${text}`);
  return JSON.parse(text).access_token;
}

/**
 * Closes what a suite opened: browsers, then the server (its log saved as the artifact `log`
 * first), then scripted model servers. Any part may be missing: a before() that failed half
 * way still cleans up what it started.
 */
export async function tearDown({ server, log, browsers = [], mocks = [] }) {
  for (const browser of browsers) await browser?.close();
  if (server) {
    await saveArtifact(ARTIFACTS, log, server.logs());
    await server.stop();
  }
  for (const mock of mocks) await mock?.stop();
}

/**
 * Opens Chromium with a fresh profile directory and one page.
 * Returns { context, page, close() }; close() also deletes the profile.
 */
export async function openBrowser(contextOptions) {
  const profile = await mkdtemp(join(tmpdir(), "mobius-e2e-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    ...contextOptions,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  await reportBrowserVersion(page);
  return {
    context,
    page,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

let versionReported = false;

/**
 * Prints, once per suite, the Chromium version under test next to the one the suites last passed
 * with, so a failure that arrives with a new browser says so in the output.
 */
async function reportBrowserVersion(page) {
  if (versionReported) return;
  versionReported = true;
  const cdp = await page.context().newCDPSession(page);
  const { product } = await cdp.send("Browser.getVersion");
  await cdp.detach();
  const running = product.match(/Chrome\/([\d.]+)/)?.[1] ?? product;
  const lastGreen = (await readFile(LAST_GREEN_FILE, "utf8").catch(() => "unknown")).trim();
  const note = running === lastGreen ? "the version the suites last passed with" : `the suites last passed with ${lastGreen}: a failure may come from the browser change`;
  console.log(`# browser: Chromium ${running} (${note})`);
}

/** Fills in and submits the sign-in form as the suites' owner. */
export async function signInAsOwner(page) {
  await page.getByRole("heading", { name: "Sign in to Möbius" }).waitFor();
  await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
  await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/**
 * `api(path, {method, body, token})` against `origin()` with `token()` by default: answers
 * `{status, json (null when not JSON), text, headers}`.
 */
export function apiClient(origin, token) {
  return async (path, { method = "GET", body, token: as = token() } = {}) => {
    const response = await fetch(origin() + path, {
      method,
      headers: { Authorization: `Bearer ${as}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // Not JSON.
    }
    return { status: response.status, json, text, headers: response.headers };
  };
}

/** Watches a page for uncaught errors and console errors other than failed HTTP statuses. */
export function watchProblems(page) {
  const problems = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // Chromium logs every 4xx fetch as a console error; the journey causes 401s on purpose.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console: ${message.text()}`);
    }
  });
  return problems;
}

/** Saves a screenshot of `page` as the artifact `name`. */
export async function screenshot(page, name) {
  await saveArtifact(ARTIFACTS, name, await page.screenshot({ animations: "disabled" }));
}

/**
 * A suite's `step(name, body)`: a test that runs `body(page())` and, when it fails, saves a
 * screenshot `failure-<prefix>-<name>.png` before rethrowing.
 */
export function stepper({ prefix, timeout, page }) {
  return (name, body) =>
    test(name, { timeout }, async () => {
      try {
        await body(page());
      } catch (error) {
        const file = `failure-${prefix}-${name.replace(/\W+/g, "-").slice(0, 60)}.png`;
        await saveArtifact(ARTIFACTS, file, await page().screenshot().catch(() => Buffer.alloc(0)));
        throw error;
      }
    });
}

/** Writes a file into the artifacts directory, creating it first. */
export async function saveArtifact(dir, name, contents) {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, name), contents);
}

/**
 * Starts the scripted Anthropic model server (tests/fake-providers/mock_anthropic.py) on a free
 * port with `script` (an object, written to a temp file). Returns { url, requests(), stop() }.
 */
export async function startMockAnthropic(script) {
  return startMock("mock_anthropic", script);
}

/** The scripted OpenAI Responses server for the real Codex CLI (`tests/fake-providers/mock_openai.py`). */
export async function startMockOpenAI(script) {
  return startMock("mock_openai", script);
}

/** Starts a scripted model server of tests/fake-providers (`name`.py) with `script`. */
async function startMock(name, script) {
  const dir = await mkdtemp(join(tmpdir(), "mobius-e2e-mock-"));
  const scriptFile = join(dir, "script.json");
  const portFile = join(dir, "port.txt");
  await writeFile(scriptFile, JSON.stringify(script));
  const child = spawn("python3", [join(REPO, "tests", "fake-providers", `${name}.py`), "--port", "0", "--port-file", portFile, "--script", scriptFile], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (c) => (output = (output + c).slice(-MAX_LOG_CHARS)));
  child.stderr.on("data", (c) => (output = (output + c).slice(-MAX_LOG_CHARS)));
  let exited = false;
  child.once("exit", () => (exited = true));
  const stop = async () => {
    if (!exited) {
      const done = once(child, "exit");
      child.kill("SIGTERM");
      await done;
    }
    await rm(dir, { recursive: true, force: true });
  };
  // The port file is written atomically once the mock listens.
  const listening = async () => {
    if (exited) throw new Error(`${name} exited:\n${output}`);
    return (await readFile(portFile, "utf8").catch(() => "")).trim();
  };
  let port;
  try {
    port = await eventually(`${name} listens`, listening, { timeoutMs: READY_TIMEOUT_MS });
  } catch (error) {
    await stop();
    throw new Error(`${name} did not start (${error.message}):\n${output}`);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    logs: () => output,
    requests: async () => (await fetch(`${url}/_mock/requests`)).json(),
    stop,
  };
}

/** The Claude Code CLI the server should run: MOBIUS_CLAUDE_BIN, else the one under MOBIUS_CLI_DIR. */
export function claudeBin() {
  if (process.env.MOBIUS_CLAUDE_BIN) return process.env.MOBIUS_CLAUDE_BIN;
  const dir = process.env.MOBIUS_CLI_DIR ?? "/var/cache/mobius-agent-clis";
  return join(dir, "node_modules", ".bin", "claude");
}

/** The Codex CLI the suites drive (`MOBIUS_CODEX_BIN`, else the pinned install). */
export function codexBin() {
  if (process.env.MOBIUS_CODEX_BIN) return process.env.MOBIUS_CODEX_BIN;
  const dir = process.env.MOBIUS_CLI_DIR ?? "/var/cache/mobius-agent-clis";
  return join(dir, "node_modules", ".bin", "codex");
}

/** Server environment that runs real Codex turns against the scripted Responses server. */
export function codexEnv(mockUrl) {
  return {
    MOBIUS_CODEX_BIN: codexBin(),
    MOBIUS_OPENAI_API_URL: `${mockUrl}/v1`,
    MOBIUS_CODEX_BASE_URL: `${mockUrl}/v1`,
    MOBIUS_SKILL_DIR: join(REPO, "skill"),
  };
}

/** Server environment that runs real Claude Code turns against the scripted model server. */
export function agentEnv(mockUrl) {
  return {
    MOBIUS_CLAUDE_BIN: claudeBin(),
    MOBIUS_CLAUDE_BASE_URL: mockUrl,
    MOBIUS_SKILL_DIR: join(REPO, "skill"),
  };
}

const AXE_SOURCE = join(REPO, "tests", "e2e", "node_modules", "axe-core", "axe.min.js");

/** Fails if the page scrolls sideways or any text field renders below 16px (iOS zoom). */
export async function assertFitsAndLegible(page, view) {
  const layout = await page.evaluate(() => ({
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    small: [...document.querySelectorAll("input:not([type=radio]):not([type=checkbox]), textarea, select")]
      .map((el) => parseFloat(getComputedStyle(el).fontSize))
      .filter((size) => size < 16),
  }));
  assert.ok(layout.overflow <= 0, `${view} overflows horizontally by ${layout.overflow}px`);
  assert.deepEqual(layout.small, [], `${view} has text fields under 16px`);
}

/**
 * Runs axe-core in the page and returns the serious and critical violations, each as
 * "rule [impact]: target — summary".
 */
export async function accessibilityProblems(page, { exclude = [] } = {}) {
  // Finite animations run to their end first (a card rising in at 0.8 opacity reads as low
  // contrast); endless ones (a spinner) are left as they are, and none is waited on past 2 s.
  await page.evaluate(() =>
    Promise.race([
      Promise.all(
        document
          .getAnimations()
          .filter((a) => a.effect?.getComputedTiming().endTime !== Infinity)
          .map((a) => a.finished.catch(() => {})),
      ),
      new Promise((resolve) => setTimeout(resolve, 2_000)),
    ]),
  );
  const loaded = await page.evaluate(() => typeof window.axe === "object");
  // Evaluated over the DevTools protocol, so the page's strict CSP (no inline scripts) stays on.
  if (!loaded) await page.evaluate(`${await readFile(AXE_SOURCE, "utf8")}\n;void 0`);
  const result = await page.evaluate(async (excluded) => {
    const context = excluded.length ? { exclude: excluded.map((s) => [s]) } : document;
    const report = await window.axe.run(context, { resultTypes: ["violations"] });
    return report.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .flatMap((v) => v.nodes.map((n) => `${v.id} [${v.impact}]: ${n.target.join(" ")} — ${n.failureSummary?.split("\n")[1]?.trim() ?? v.help}`));
  }, exclude);
  return result;
}

/** What a person can tap or focus: the selector the touch-target and label checks walk. */
const CONTROLS =
  'button, a[href], input:not([type="hidden"]), select, textarea, summary, [role="button"], [role="tab"], [role="menuitem"], [role="link"], [role="checkbox"], [role="radio"], [role="switch"]';

/**
 * The controls on screen smaller than `min` × `min` CSS px, each as "what (w×h)". A checkbox or
 * radio counts by its label when it has one (the label is the target); a link inside running
 * text is exempt (WCAG 2.5.8's inline exception), as are controls hidden, inert or off-screen.
 */
export async function smallTargets(page, { min = 44, within = "body" } = {}) {
  return page.evaluate(
    ([selector, min, within]) => {
      const root = document.querySelector(within) ?? document.body;
      const out = [];
      const describe = (el) => {
        const name = el.getAttribute("aria-label") || el.textContent?.replace(/\s+/g, " ").trim().slice(0, 40) || el.getAttribute("title") || "";
        const cls = typeof el.className === "string" ? el.className.split(/\s+/).filter(Boolean).slice(0, 2).join(".") : "";
        return `${el.tagName.toLowerCase()}${cls ? "." + cls : ""} “${name}”`;
      };
      for (const el of root.querySelectorAll(selector)) {
        if (el.closest("[inert], [hidden], [aria-hidden='true']")) continue;
        const style = getComputedStyle(el);
        if (style.visibility === "hidden" || style.display === "none" || style.pointerEvents === "none") continue;
        let box = el.getBoundingClientRect();
        if (box.width <= 1 || box.height <= 1) continue;
        if (box.bottom <= 0 || box.top >= innerHeight || box.right <= 0 || box.left >= innerWidth) continue;
        if (el.matches('input[type="checkbox"], input[type="radio"]')) {
          const label = el.closest("label") ?? (el.id ? document.querySelector(`label[for="${CSS.escape(el.id)}"]`) : null);
          if (label) box = label.getBoundingClientRect();
        }
        if (el.matches("a") && el.closest(".markdown p, .markdown li, .markdown td, .settings-lead, p")) continue;
        if (box.width < min - 0.5 || box.height < min - 0.5) out.push(`${describe(el)} (${Math.round(box.width)}×${Math.round(box.height)})`);
      }
      return out;
    },
    [CONTROLS, min, within],
  );
}

/**
 * Controls whose accessible name does not contain their visible label (voice control users say
 * what they see): each as "label → name". Only `aria-label` overrides are checked (a name taken
 * from the content is the content).
 */
export async function labelMismatches(page) {
  return page.evaluate((selector) => {
    const norm = (text) => text.replace(/[\s\u00a0]+/g, " ").replace(/[…:]/g, "").trim().toLowerCase();
    const out = [];
    for (const el of document.querySelectorAll(selector)) {
      const label = el.getAttribute("aria-label");
      if (label === null || el.closest("[inert], [hidden], [aria-hidden='true']")) continue;
      if (el.getBoundingClientRect().width <= 1) continue;
      const visible = norm(el.innerText ?? "");
      // Icons and single symbols carry no words to say.
      if (visible.length < 2 || !/[a-z]/i.test(visible)) continue;
      if (!norm(label).includes(visible)) out.push(`“${visible}” → “${label}”`);
    }
    return out;
  }, CONTROLS);
}

/**
 * What runs past the right edge: the document's overflow, and every element (under `within`)
 * whose box leaves the viewport or whose content is wider than a box that would clip or scroll
 * it sideways. Each as "what: detail".
 */
export async function horizontalOverflow(page, { within = "body" } = {}) {
  return page.evaluate((within) => {
    const out = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > innerWidth) out.push(`document: ${doc.scrollWidth} > ${innerWidth}`);
    const root = document.querySelector(within) ?? document.body;
    for (const el of [root, ...root.querySelectorAll("*")]) {
      if (el.closest("[hidden], .visually-hidden, svg")) continue;
      const box = el.getBoundingClientRect();
      // Nothing drawn, or text kept for screen readers only (a 1-px clipped box).
      if (box.width <= 1 || box.height <= 1) continue;
      const cls = typeof el.className === "string" ? el.className.split(/\s+/).filter(Boolean).slice(0, 2).join(".") : "";
      const what = `${el.tagName.toLowerCase()}${cls ? "." + cls : ""}`;
      if (box.right > innerWidth + 0.5 || box.left < -0.5) out.push(`${what}: ${Math.round(box.left)}..${Math.round(box.right)} of ${innerWidth}`);
      const style = getComputedStyle(el);
      // Text cut with an ellipsis on purpose is not overflow; content scrolled sideways in its own box (code) neither.
      if (style.textOverflow === "ellipsis" || style.overflowX === "auto" || style.overflowX === "scroll") continue;
      if (el.scrollWidth > el.clientWidth + 1 && style.overflowX !== "visible" && el.clientWidth > 0) out.push(`${what}: content ${el.scrollWidth} > box ${el.clientWidth}`);
    }
    return out;
  }, within);
}

// ---- the chat, as the owner drives it (shared by the chat and phone suites) ----

/** How long one scripted agent turn may take. */
export const TURN_TIMEOUT = 60_000;

export const composer = (page) => page.getByRole("textbox", { name: "Message", exact: true });
export const stopButton = (page) => page.getByRole("button", { name: "Stop", exact: true });
export const liveRow = (page) => page.locator('.row[data-live="true"]');

/** Types `text` and sends it (or queues it during a turn); resolves with the POST's response. */
export async function send(page, text) {
  await composer(page).fill(text);
  const posted = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
  await page.getByRole("button", { name: /^(Send|Queue message)$/ }).click();
  return posted;
}

/** Waits until no turn runs: the Stop button is gone and no row is live. */
export async function turnEnds(page) {
  await stopButton(page).waitFor({ state: "detached", timeout: TURN_TIMEOUT });
  await liveRow(page).waitFor({ state: "detached", timeout: TURN_TIMEOUT });
}
