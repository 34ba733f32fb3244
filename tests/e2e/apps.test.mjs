// The mini-app journey against the real server: an app written into DATA_DIR/apps/hello and
// applied with the owner's token opens from the drawer (full screen on a phone, beside the chat
// on a desktop), its storage writes survive a reload, its frame cannot reach the shell's token or
// storage, window.mobius works end to end, its standalone host /apps/hello/ boots with its own
// manifest, and with the network cut it starts again from the service worker's cache (a write
// made offline waits in the outbox and lands when the network is back). An app that asks for
// immersive mode gets the shell's chrome out of its way (and a way back), and its frame gets the
// --mobius-safe-* insets. Then the real Claude Code CLI, driven by the
// scripted model, writes apps/hello-agent and runs `mobius app apply hello-agent`: the preview
// opens from the chat (beside it on the desktop, from the "is ready" card on the phone), from the
// drawer, and offline. An app that navigates its frame to the shell, or opens the shell in a popup,
// gets a sandboxed (opaque) document that cannot read the owner's token. Screenshots go to
// tests/artifacts/.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as journey.test.mjs); MOBIUS_APP_NODE_MODULES and
// MOBIUS_APP_RUNTIME_DIR default to the repository's frontend/node_modules and frontend/public;
// the Claude CLI comes from MOBIUS_CLAUDE_BIN or $MOBIUS_CLI_DIR/node_modules/.bin/claude.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  accessibilityProblems,
  agentEnv,
  apiClient,
  appBuildEnv,
  ARTIFACTS,
  claudeBin,
  DESKTOP,
  eventually,
  openBrowser,
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
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const TURN_TIMEOUT = 90_000;

const HELLO_MANIFEST = {
  id: "hello",
  name: "Hello",
  version: "1.0.0",
  description: "A counter that remembers.",
  entry: "index.jsx",
  theme_color: "#0f766e",
};

// Storage through window.mobius, plus the frame's virtual localStorage (a visit counter).
const HELLO_JSX = `import { useEffect, useState } from "react";

export default function Hello() {
  const [count, setCount] = useState(null);
  const [visits] = useState(() => {
    const n = Number(localStorage.getItem("visits") || "0") + 1;
    localStorage.setItem("visits", String(n));
    return n;
  });
  useEffect(() => {
    window.mobius.storage.get("counter.json").then((saved) => setCount(saved ? saved.n : 0));
  }, []);
  if (count === null) return <p>Loading…</p>;
  const bump = async () => {
    const n = count + 1;
    setCount(n);
    await window.mobius.storage.set("counter.json", { n });
  };
  return (
    <main style={{ padding: 16, fontFamily: "system-ui", color: "var(--mobius-text)" }}>
      <h1>Hello from a mini-app</h1>
      <p>Visit {visits}</p>
      <button type="button" onClick={bump}>Count {count}</button>
    </main>
  );
}
`;

const IMMERSIVE_MANIFEST = {
  id: "immersive",
  name: "Immersive",
  version: "1.0.0",
  description: "Asks the shell to hide its chrome.",
  entry: "index.jsx",
};

// window.mobius.immersive as a catalog app uses it, padded with the frame's safe-area insets.
const IMMERSIVE_JSX = `import { useEffect, useState } from "react";

export default function Immersive() {
  const [hidden, setHidden] = useState(false);
  useEffect(() => window.mobius.immersive.subscribe(setHidden), []);
  return (
    <main style={{ padding: "calc(16px + var(--mobius-safe-top)) 16px 16px", fontFamily: "system-ui" }}>
      <h1>Immersive</h1>
      <p>{hidden ? "Chrome hidden" : "Chrome shown"}</p>
      <button type="button" onClick={() => window.mobius.immersive.set(true)}>Go full screen</button>
    </main>
  );
}
`;

const AGENT_MANIFEST = {
  id: "hello-agent",
  name: "Hello Agent",
  version: "1.0.0",
  description: "Built by the agent in a chat.",
  entry: "index.jsx",
};

const AGENT_JSX = `import { useEffect, useState } from "react";

export default function HelloAgent() {
  const [saved, setSaved] = useState(undefined);
  useEffect(() => {
    window.mobius.storage.get("greeting.json").then(setSaved);
  }, []);
  const save = async () => {
    await window.mobius.storage.set("greeting.json", { text: "Saved by the app" });
    setSaved({ text: "Saved by the app" });
  };
  return (
    <main style={{ padding: 16, fontFamily: "system-ui" }}>
      <h1>Hello from the agent</h1>
      <p>{saved === undefined ? "Loading…" : saved ? saved.text : "Nothing saved yet"}</p>
      <button type="button" onClick={save}>Save a greeting</button>
    </main>
  );
}
`;

// The model writes the app into the data directory (the agent's working directory) and applies
// it with the server's own CLI, as the skill tells a real agent to.
const SCRIPT = {
  steps: [
    {
      text: "I'll build the app.",
      tool_use: { name: "Write", input: { file_path: "{cwd}/apps/hello-agent/mobius.json", content: JSON.stringify(AGENT_MANIFEST, null, 2) } },
    },
    { tool_use: { name: "Write", input: { file_path: "{cwd}/apps/hello-agent/index.jsx", content: AGENT_JSX } } },
    { tool_use: { name: "Bash", input: { command: "mobius app apply hello-agent", description: "Apply the app" } } },
    { text: "Hello Agent is ready: it opens beside this chat." },
  ],
  default: { text: "Nothing more to do." },
};

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
// Never skipped: a gap is a failure with a clear message.
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);
for (const [name, dir] of Object.entries(appBuildEnv())) {
  if (!existsSync(dir)) throw new Error(`${name}=${dir} does not exist: run npm ci in frontend/ (the server compiles apps with it)`);
}
if (!existsSync(join(appBuildEnv().MOBIUS_APP_NODE_MODULES, "react"))) {
  throw new Error(`${appBuildEnv().MOBIUS_APP_NODE_MODULES} has no react: run npm ci in frontend/`);
}

let mock;
let server;
let phone;
let ownerApiToken;
let helloId;
let chatUrl;
let problems = [];

// Records every message a frame receives, so the test can prove what did and did not reach it.
// (Init scripts run in every frame, the sandboxed one included.)
const RECORD_FRAME_MESSAGES = () => {
  if (window.top === window) return;
  window.__mobiusSeen = [];
  window.addEventListener(
    "message",
    (event) => {
      try {
        window.__mobiusSeen.push(JSON.stringify(event.data, (_key, value) => (value instanceof ArrayBuffer ? "[bytes]" : value)));
      } catch {
        window.__mobiusSeen.push("[unserialisable]");
      }
    },
    true,
  );
};

/** axe-core on the shell around the app (the app's own document is the app author's). */
async function assertAccessible(page, view) {
  const found = await accessibilityProblems(page, { exclude: [".app-frame"] });
  assert.deepEqual(found, [], `axe found serious/critical problems on ${view}`);
}

const step = stepper({ prefix: "apps", timeout: STEP_TIMEOUT, page: () => phone.page });

const api = apiClient(() => server.origin, () => ownerApiToken);

async function writeApp(slug, manifest, source) {
  const dir = join(server.dataDir, "apps", slug);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "mobius.json"), JSON.stringify(manifest, null, 2));
  await writeFile(join(dir, "index.jsx"), source);
}

const signIn = signInAsOwner;

const frameOf = (page, name) => page.frameLocator(`iframe[title="${name}"]`);
/** The Playwright frame object of the app frame (for evaluate). */
const appFrame = (page) => page.frames().find((f) => /\/api\/apps\/\d+\/frame/.test(f.url()));

/** Waits until the server holds `expected` at the app's storage `path`. */
async function serverHolds(appId, path, expected) {
  await eventually(`storage ${path} holds ${JSON.stringify(expected)}`, async () => {
    const { status, json } = await api(`/api/storage/apps/${appId}/${path}`);
    return status === 200 && JSON.stringify(json) === JSON.stringify(expected);
  });
}

async function openDrawerApp(page, name) {
  await page.getByRole("button", { name: "Open chats" }).click();
  const drawer = page.getByRole("dialog", { name: "Chats" });
  const apps = drawer.getByRole("region", { name: "Apps" });
  await apps.waitFor();
  await apps.getByRole("button", { name: new RegExp(`^${name}( |$)`) }).click();
}

describe("mini-apps (real server, opaque frames, service worker)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerApiToken = await setupOwner(server.origin);
    await writeApp("hello", HELLO_MANIFEST, HELLO_JSX);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "hello" } });
    assert.equal(applied.status, 200, `apply hello: ${applied.text}`);
    helloId = applied.json.app.id;
    await writeApp("immersive", IMMERSIVE_MANIFEST, IMMERSIVE_JSX);
    const immersiveApplied = await api("/api/apps/apply", { method: "POST", body: { slug: "immersive" } });
    assert.equal(immersiveApplied.status, 200, `apply immersive: ${immersiveApplied.text}`);
    phone = await openBrowser(PHONE);
    await phone.context.addInitScript(RECORD_FRAME_MESSAGES);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "apps-server.log", browsers: [phone], mocks: [mock] }));

  step("the drawer lists the app, and on a phone it opens full screen", async (page) => {
    await page.goto(server.origin + "/");
    await signIn(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    chatUrl = page.url();
    // The service worker takes the page over on first install (it will serve the app offline).
    await page.waitForFunction(() => navigator.serviceWorker?.controller !== null, null, { timeout: 15_000 });
    await page.getByRole("button", { name: "Open chats" }).click();
    const apps = page.getByRole("dialog", { name: "Chats" }).getByRole("region", { name: "Apps" });
    const row = apps.getByRole("button", { name: /^Hello( |$)/ });
    await row.waitFor();
    assert.equal(await row.locator("img.app-icon").getAttribute("src"), `/api/apps/${helloId}/icon?v=${(await api(`/api/apps/${helloId}`)).json.v}`);
    await row.getByRole("img", { name: "Updated" }).waitFor();
    await screenshot(page, "apps-drawer-phone.png");
    await assertAccessible(page, "the drawer with apps");
    await row.click();
    const frame = frameOf(page, "Hello");
    await frame.getByRole("button", { name: "Count 0" }).waitFor({ timeout: 30_000 });
    await frame.getByText("Visit 1").waitFor();
    await page.getByRole("status", { name: "Opening Hello" }).waitFor({ state: "detached" });
    assert.match(page.url(), new RegExp(`\\?app=${helloId}$`));
    const pane = await page.locator(".app-pane").boundingBox();
    assert.ok(pane && pane.x === 0 && pane.y === 0 && pane.width === 390 && pane.height === 844, `full screen: ${JSON.stringify(pane)}`);
    await screenshot(page, "app-phone.png");
    await assertAccessible(page, "a full-screen app");
    // The frame follows the shell's colour scheme (so it never paints light inside dark).
    await page.emulateMedia({ colorScheme: "dark" });
    const frameScheme = () => appFrame(page).evaluate(() => document.documentElement.style.colorScheme);
    await eventually("the frame switches to dark", async () => (await frameScheme()) === "dark");
    await screenshot(page, "app-phone-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
    // Opening marked the build as seen.
    await eventually("opening marks the build seen", async () => !(await api(`/api/apps/${helloId}`)).json.has_unseen_update);
  });

  step("a storage write from inside the app survives a reload, and so does its localStorage", async (page) => {
    const frame = frameOf(page, "Hello");
    await frame.getByRole("button", { name: "Count 0" }).click();
    await frame.getByRole("button", { name: "Count 1" }).waitFor();
    await serverHolds(helloId, "counter.json", { n: 1 });
    await page.reload();
    await frame.getByRole("button", { name: "Count 1" }).waitFor({ timeout: 30_000 });
    await frame.getByText("Visit 2").waitFor();
  });

  step("script in the frame cannot reach the shell's token or storage", async (page) => {
    const ownerToken = await page.evaluate(() => localStorage.getItem("mobius.token"));
    assert.ok(ownerToken, "the shell holds an owner token");
    const frame = appFrame(page);
    assert.ok(frame, "the app frame is on the page");
    const inside = await frame.evaluate(async () => {
      const out = {};
      try {
        out.parentStorage = typeof parent.localStorage.getItem("mobius.token");
      } catch (error) {
        out.parentStorage = error.name;
      }
      try {
        out.parentDocument = typeof parent.document.cookie;
      } catch (error) {
        out.parentDocument = error.name;
      }
      try {
        out.cookie = document.cookie;
      } catch (error) {
        out.cookie = error.name;
      }
      out.origin = self.origin;
      out.shim = localStorage[Symbol.for("mobius.virtualStorage")] === true;
      out.visits = localStorage.getItem("visits");
      out.shellKeys = ["mobius.token", "mobius.session"].map((k) => localStorage.getItem(k));
      const anonymous = await fetch("/api/chats");
      out.anonymous = { status: anonymous.status, body: await anonymous.text() };
      out.html = document.documentElement.outerHTML;
      out.config = JSON.stringify(globalThis.__mobiusRuntimeConfig);
      out.seen = window.__mobiusSeen ?? null;
      return out;
    });
    assert.equal(inside.parentStorage, "SecurityError", "parent.localStorage must throw");
    assert.equal(inside.parentDocument, "SecurityError", "parent.document must throw");
    assert.ok(inside.cookie === "" || inside.cookie === "SecurityError", `document.cookie: ${inside.cookie}`);
    assert.equal(inside.origin, "null", "the frame runs in an opaque origin");
    assert.equal(inside.shim, true, "localStorage is the in-memory shim");
    assert.equal(inside.visits, "2");
    assert.deepEqual(inside.shellKeys, [null, null], "the shell's keys are not in the frame's storage");
    assert.equal(inside.anonymous.status, 401, `GET /api/chats without a token: ${inside.anonymous.status}`);
    assert.ok(Array.isArray(inside.seen) && inside.seen.length > 0, "the frame's messages were recorded");
    for (const [what, text] of [["page", inside.html], ["runtime config", inside.config], ["messages", inside.seen.join("\n")], ["401 body", inside.anonymous.body]]) {
      assert.ok(!text.includes(ownerToken), `the owner's token leaked into the frame's ${what}`);
    }
    // What the frame did get is an app token, which owner routes refuse.
    const init = inside.seen.map((s) => JSON.parse(s)).find((m) => m?.type === "moebius:frame-init" && m.token);
    assert.ok(init, "the frame received frame-init with a token");
    const claims = JSON.parse(Buffer.from(init.token.split(".")[1], "base64url").toString());
    assert.equal(claims.scope, "app");
    assert.equal(claims.app_id, helloId);
    assert.equal((await api("/api/chats", { token: init.token })).status, 403, "an app token is refused by owner routes");
  });

  step("window.mobius works end to end: typed storage, versions, conflicts, listing, live changes", async (page) => {
    const frame = appFrame(page);
    const out = await frame.evaluate(async () => {
      const { storage } = window.mobius;
      const result = { appId: window.mobius.appId };
      await storage.setText("notes/today.txt", "hello text");
      result.text = await storage.getText("notes/today.txt");
      try {
        await storage.get("notes/today.txt");
        result.typedRead = "no error";
      } catch (error) {
        result.typedRead = error.code;
      }
      const current = await storage.getWithVersion("counter.json");
      result.value = current.value;
      const written = await storage.durableWrite("counter.json", current.value, { ifMatch: current.version });
      result.newVersion = written.version !== current.version;
      try {
        await storage.durableWrite("counter.json", { n: 99 }, { ifMatch: current.version });
        result.conflict = "none";
      } catch (error) {
        result.conflict = `${error.name}:${error.code}`;
      }
      try {
        await storage.durableWrite("counter.json", { n: 99 }, { ifNoneMatch: "*" });
        result.exists = "none";
      } catch (error) {
        result.exists = error.code;
      }
      result.listing = (await storage.list("notes", { includeContent: true })).map((e) => [e.name, e.type, e.content]);
      await storage.setBlob("bin/data.bin", new Blob([new Uint8Array([1, 2, 3])], { type: "application/octet-stream" }));
      result.blob = [...new Uint8Array(await (await storage.getBlob("bin/data.bin")).arrayBuffer())];
      await storage.remove("notes/today.txt");
      result.removed = await storage.getText("notes/today.txt");
      const changes = [];
      let changed;
      const secondChange = new Promise((resolve) => (changed = resolve));
      await new Promise((resolve) => {
        storage.subscribe("live.json", (value) => {
          changes.push(value);
          if (changes.length === 1) resolve();
          else changed();
        });
      });
      await storage.set("live.json", { x: 1 });
      // The write's own change arrives (and nothing before it twice).
      await secondChange;
      result.changes = changes;
      result.pending = await storage.pendingCount();
      result.capabilities = window.mobius.capabilities.list();
      return result;
    });
    assert.deepEqual(out, {
      appId: String(helloId),
      text: "hello text",
      typedRead: "kind_mismatch",
      value: { n: 1 },
      newVersion: true,
      conflict: "DurableWriteError:conflict",
      exists: "conflict",
      listing: [["today.txt", "file", "hello text"]],
      blob: [1, 2, 3],
      removed: null,
      changes: [null, { x: 1 }],
      pending: 0,
      capabilities: [],
    });
    await serverHolds(helloId, "live.json", { x: 1 });
  });

  step("an in-app screen is a history entry: Back closes it, not the app", async (page) => {
    const frame = appFrame(page);
    await frame.evaluate(() => {
      window.__backs = 0;
      window.mobius.nav.open("Details", { onBack: () => (window.__backs += 1) });
    });
    await page.waitForFunction(() => history.state?.appNavDepth === 1);
    await page.goBack();
    await page.waitForFunction(() => !history.state?.appNavDepth);
    await frameOf(page, "Hello").getByRole("button", { name: "Count 1" }).waitFor();
    assert.equal(await frame.evaluate(() => window.__backs), 1, "onBack ran once");
    assert.match(page.url(), new RegExp(`\\?app=${helloId}$`), "the app is still open");
  });

  step("Back closes the full-screen app", async (page) => {
    await page.goBack();
    await page.locator(".app-pane").waitFor({ state: "detached" });
    assert.equal(new URL(page.url()).search, "");
    await page.getByRole("button", { name: "Open chats" }).waitFor();
  });

  step("an app that asks for immersive mode hides the app bar, keeps a way out, and gets safe-area insets", async (page) => {
    await openDrawerApp(page, "Immersive");
    const frame = frameOf(page, "Immersive");
    await frame.getByText("Chrome shown").waitFor({ timeout: 30_000 });
    const bar = page.locator(".app-pane-bar");
    await bar.waitFor();
    const inside = () => appFrame(page).evaluate(() => ({
      hidden: window.mobius.immersive.hidden,
      safe: ["top", "right", "bottom", "left"].map((edge) => getComputedStyle(document.documentElement).getPropertyValue(`--mobius-safe-${edge}`).trim()),
      insetsSeen: (window.__mobiusSeen ?? []).some((s) => s.includes('"moebius:frame-insets"')),
    }));
    const before = await inside();
    assert.equal(before.hidden, false);
    for (const value of before.safe) assert.match(value, /^\d+(\.\d+)?px$/, `--mobius-safe-* on the frame's root: ${before.safe}`);
    assert.ok(before.insetsSeen, "the shell sent frame-insets");

    await frame.getByRole("button", { name: "Go full screen" }).click();
    await bar.waitFor({ state: "hidden" });
    await frame.getByText("Chrome hidden").waitFor();
    assert.equal((await inside()).hidden, true, "mobius.immersive.hidden inside the frame");
    const exit = page.getByRole("button", { name: "Exit full screen" });
    await exit.waitFor();
    // The frame now has the whole screen.
    const box = await page.locator(".app-frame").boundingBox();
    assert.ok(box && box.y === 0 && box.height === 844, `frame box in immersive mode: ${JSON.stringify(box)}`);
    await screenshot(page, "app-immersive-phone.png");
    await assertAccessible(page, "an immersive app");

    await exit.click();
    await bar.waitFor();
    await frame.getByText("Chrome shown").waitFor();
    assert.equal((await inside()).hidden, false);
    assert.equal(await exit.count(), 0, "the exit button goes with immersive mode");

    // The system Back leaves immersive mode first, then closes the app.
    await frame.getByRole("button", { name: "Go full screen" }).click();
    await bar.waitFor({ state: "hidden" });
    await page.goBack();
    await bar.waitFor();
    await frame.getByText("Chrome shown").waitFor();
    assert.match(page.url(), /\?app=\d+$/, "Back left immersive mode, not the app");
    await page.goBack();
    await page.locator(".app-pane").waitFor({ state: "detached" });
  });

  step("the standalone /apps/hello/ page loads with its own manifest and runs the same app", async (page) => {
    await page.goto(`${server.origin}/apps/hello/`);
    const frame = frameOf(page, "Hello");
    await frame.getByRole("button", { name: "Count 1" }).waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('link[rel="manifest"]').getAttribute("href"), "/apps/hello/manifest.json");
    const manifest = await page.evaluate(async () => (await fetch("/apps/hello/manifest.json")).json());
    assert.equal(manifest.start_url, "/apps/hello/");
    assert.equal(manifest.scope, "/apps/hello/");
    assert.equal(manifest.name, "Hello");
    assert.equal(await page.locator(".sidebar, .topbar").count(), 0, "no shell chrome around a standalone app");
    await screenshot(page, "app-standalone-phone.png");
  });

  step("with the network cut, the app opened once starts again (in the shell and standalone)", async (page) => {
    const frame = frameOf(page, "Hello");
    let refused = 0;
    await phone.context.setOffline(true);
    try {
      await page.goto(`${server.origin}/?app=${helloId}`);
      await frame.getByRole("button", { name: "Count 1" }).waitFor({ timeout: 30_000 });
      await page.locator(".app-pane").getByRole("status").getByText("Offline").waitFor();
      await screenshot(page, "app-offline-phone.png");
      await page.goto(`${server.origin}/apps/hello/`);
      await frame.getByRole("button", { name: "Count 1" }).waitFor({ timeout: 30_000 });
      // A write while offline waits in the outbox…
      await frame.getByRole("button", { name: "Count 1" }).click();
      await frame.getByRole("button", { name: "Count 2" }).waitFor();
      assert.equal(await appFrame(page).evaluate(() => window.mobius.storage.pendingCount()), 1);
    } finally {
      // …and reaches the server once the network is back, also when the browser says "online"
      // before its network can carry a request (seen with some Chromium versions): the first
      // health probes after the network returns fail here, and the shell must probe again soon,
      // not in 20 s. The test also announces `online` itself, so it does not depend on when (or
      // whether) this browser version fires the event.
      await page.route("**/api/health", (route) => (refused++ < 2 ? route.abort("internetdisconnected") : route.continue()));
      await phone.context.setOffline(false);
    }
    try {
      await page.evaluate(() => window.dispatchEvent(new Event("online")));
      await serverHolds(helloId, "counter.json", { n: 2 });
    } finally {
      await page.unroute("**/api/health");
    }
    assert.ok(refused >= 1, "the shell probed /api/health after the network came back");
    assert.equal(await appFrame(page).evaluate(() => window.mobius.storage.pendingCount()), 0);
  });

  test("on a desktop (1280×800) the standalone host signs in first, and in the shell the app opens beside the chat", { timeout: STEP_TIMEOUT }, async () => {
    const desktop = await openBrowser(DESKTOP);
    try {
      const page = desktop.page;
      const desktopProblems = watchProblems(page);
      // Signed out, the standalone host asks for a sign-in first, then comes back to the app.
      await page.goto(`${server.origin}/apps/hello/`);
      await signIn(page);
      await frameOf(page, "Hello").getByRole("button", { name: "Count 2" }).waitFor({ timeout: 30_000 });
      assert.equal(new URL(page.url()).pathname, "/apps/hello/");
      await page.goto(chatUrl);
      await page.locator(".sidebar").getByRole("region", { name: "Apps" }).getByRole("button", { name: /^Hello( |$)/ }).click();
      const frame = frameOf(page, "Hello");
      await frame.getByRole("button", { name: "Count 2" }).waitFor({ timeout: 30_000 });
      const sidebar = await page.locator(".sidebar").boundingBox();
      const main = await page.locator(".main").boundingBox();
      const pane = await page.locator(".app-pane").boundingBox();
      assert.ok(sidebar && main && pane, "sidebar, chat and app are all on screen");
      assert.ok(main.x >= sidebar.x + sidebar.width - 1 && pane.x >= main.x + main.width - 1, "sidebar | chat | app, left to right");
      assert.ok(main.width >= 360 && pane.width >= 360, `both halves usable: chat ${main.width}px, app ${pane.width}px`);
      await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
      await screenshot(page, "app-desktop.png");
      await assertAccessible(page, "an app beside the chat");
      await page.getByRole("button", { name: "Close Hello" }).click();
      await page.locator(".app-pane").waitFor({ state: "detached" });
      // Immersive beside the chat: the pane's bar goes, the chat stays; Escape inside the app ends it.
      await page.locator(".sidebar").getByRole("region", { name: "Apps" }).getByRole("button", { name: /^Immersive( |$)/ }).click();
      const immersiveFrame = frameOf(page, "Immersive");
      await immersiveFrame.getByRole("button", { name: "Go full screen" }).click();
      await page.locator(".app-pane-bar").waitFor({ state: "hidden" });
      await immersiveFrame.getByText("Chrome hidden").waitFor();
      await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
      await screenshot(page, "app-immersive-desktop.png");
      await immersiveFrame.getByRole("button", { name: "Go full screen" }).press("Escape");
      await page.locator(".app-pane-bar").waitFor();
      await immersiveFrame.getByText("Chrome shown").waitFor();
      await page.getByRole("button", { name: "Close Immersive" }).click();
      await page.locator(".app-pane").waitFor({ state: "detached" });
      assert.deepEqual(desktopProblems, []);
    } finally {
      await desktop.close();
    }
  });

  test("an app that navigates its frame to the shell, or opens it in a popup, gets a sandboxed document without the owner's token", { timeout: STEP_TIMEOUT }, async () => {
    const desktop = await openBrowser(DESKTOP);
    try {
      const page = desktop.page;
      await page.goto(chatUrl);
      await signIn(page);
      const ownerToken = await (await page.waitForFunction(() => localStorage.getItem("mobius.token"))).jsonValue();
      assert.ok(ownerToken, "the shell holds an owner token");
      await page.locator(".sidebar").getByRole("region", { name: "Apps" }).getByRole("button", { name: /^Hello( |$)/ }).click();
      await frameOf(page, "Hello").getByRole("button", { name: /^Count / }).waitFor({ timeout: 30_000 });
      const frame = appFrame(page);
      /** What a document can reach: its origin and the shell's token. */
      const reach = () => {
        let token;
        try {
          token = localStorage.getItem("mobius.token");
        } catch (error) {
          token = error.name;
        }
        return { origin: self.origin, token };
      };
      // A popup the app opens onto the shell's own address stays sandboxed.
      const [popup] = await Promise.all([page.waitForEvent("popup"), frame.evaluate(() => void window.open("/"))]);
      await popup.waitForLoadState("domcontentloaded");
      const inPopup = await popup.evaluate(reach);
      assert.equal(inPopup.origin, "null", "the popup runs in an opaque origin");
      assert.notEqual(inPopup.token, ownerToken, "the popup cannot read the owner's token");
      await popup.close();
      // The app navigates its own frame to the shell: the document it gets is sandboxed too.
      await frame.evaluate(() => void (location.href = "/")).catch(() => {});
      await frame.waitForURL(`${server.origin}/`);
      await frame.waitForLoadState("domcontentloaded");
      const inFrame = await frame.evaluate(reach);
      assert.equal(inFrame.origin, "null", "the frame's new document runs in an opaque origin");
      assert.notEqual(inFrame.token, ownerToken, "the frame's new document cannot read the owner's token");
    } finally {
      await desktop.close();
    }
  });

  test("an agent builds an app in a chat: it opens from the chat, from the drawer, and offline", { timeout: 4 * STEP_TIMEOUT }, async () => {
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, `connect Claude: ${saved.text}`);
    const desktop = await openBrowser(DESKTOP);
    const page = phone.page;
    try {
      const wide = desktop.page;
      const desktopProblems = watchProblems(wide);
      // The phone watches the same chat.
      await page.goto(chatUrl);
      await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
      await wide.goto(chatUrl);
      await signIn(wide);
      const composer = wide.getByRole("textbox", { name: "Message", exact: true });
      await composer.fill("Build me a small hello app");
      await wide.getByRole("button", { name: "Send", exact: true }).click();

      // Desktop: the preview opens by itself beside the chat once the agent applied the app.
      const agentFrame = frameOf(wide, "Hello Agent");
      await agentFrame.getByRole("heading", { name: "Hello from the agent" }).waitFor({ timeout: TURN_TIMEOUT });
      await agentFrame.getByText("Nothing saved yet").waitFor();
      await wide.getByText("Hello Agent is ready: it opens beside this chat.").waitFor({ timeout: TURN_TIMEOUT });
      await screenshot(wide, "agent-app-desktop.png");
      await agentFrame.getByRole("button", { name: "Save a greeting" }).click();
      await agentFrame.getByText("Saved by the app").waitFor();
      assert.deepEqual(desktopProblems, []);

      // Phone: a card offers the preview; Open shows it full screen.
      const offer = page.getByRole("button", { name: "Open Hello Agent" });
      await offer.waitFor({ timeout: TURN_TIMEOUT });
      await screenshot(page, "agent-app-offer-phone.png");
      await assertAccessible(page, "the preview card");
      await offer.click();
      const phoneFrame = frameOf(page, "Hello Agent");
      await phoneFrame.getByText("Saved by the app").waitFor({ timeout: 30_000 });
      await screenshot(page, "agent-app-phone.png");
      await page.goBack();
      await page.locator(".app-pane").waitFor({ state: "detached" });

      // From the drawer.
      await openDrawerApp(page, "Hello Agent");
      await phoneFrame.getByText("Saved by the app").waitFor({ timeout: 30_000 });

      // And with the network cut.
      await phone.context.setOffline(true);
      try {
        await page.reload();
        await phoneFrame.getByRole("heading", { name: "Hello from the agent" }).waitFor({ timeout: 30_000 });
        await phoneFrame.getByText("Saved by the app").waitFor();
        await screenshot(page, "agent-app-offline-phone.png");
      } finally {
        await phone.context.setOffline(false);
      }
    } catch (error) {
      await saveArtifact(ARTIFACTS, "failure-apps-agent-desktop.png", await desktop.page.screenshot().catch(() => Buffer.alloc(0)));
      await saveArtifact(ARTIFACTS, "failure-apps-agent-phone.png", await page.screenshot().catch(() => Buffer.alloc(0)));
      throw error;
    } finally {
      await desktop.close();
    }
  });

  test("no uncaught errors or CSP violations were logged on the phone", () => {
    assert.deepEqual(problems, []);
  });
});
