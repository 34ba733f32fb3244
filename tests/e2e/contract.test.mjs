// The app-platform contract in Chromium: apps written for the original platform
// (tests/fixtures/apps, written from app-platform-contract.md, not from any one app) run here
// unchanged. window.mobius has the contract's shapes; the frame is painted with the original's
// theme variables at full height; useDocument in two frames at once converges without losing an
// update; writes, blobs and signals wait offline (across a reload) and land once back online; the
// system Back reaches nav.open's onBack and an app's own raw navigation messages are answered;
// KaTeX's stylesheet and fonts come from /vendor/; declared capabilities fail with "unavailable",
// undeclared ones are refused; offline.precache'd assets are kept by the service worker; and
// wrong arguments reject with the contract's errors, never an uncaught error in the shell.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as journey.test.mjs).

import assert from "node:assert/strict";
import { cp, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  apiClient,
  eventually,
  openBrowser,
  PHONE,
  REPO,
  screenshot,
  setupOwner,
  signInAsOwner,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const FIXTURES = join(REPO, "tests", "fixtures", "apps");

let server;
let phone;
let ownerToken;
const ids = {};
let problems = [];

const step = stepper({ prefix: "contract", timeout: STEP_TIMEOUT, page: () => phone.page });

const api = apiClient(() => server.origin, () => ownerToken);

const signIn = signInAsOwner;

const frameOf = (page, name) => page.frameLocator(`iframe[title="${name}"]`);
/** The Playwright frame of app `id` (for evaluate). */
const appFrame = (page, id) => page.frames().find((f) => new RegExp(`/api/apps/${id}/frame`).test(f.url()));

async function openApp(page, slug, name) {
  await page.goto(`${server.origin}/?app=${ids[slug]}`);
  await frameOf(page, name).getByRole("heading").first().waitFor({ timeout: 30_000 });
  await page.getByRole("status", { name: `Opening ${name}` }).waitFor({ state: "detached" });
  return eventually(`the frame of ${slug}`, () => appFrame(page, ids[slug]));
}

describe("app-platform contract (fixture apps written for the original, in Chromium)", () => {
  before(async () => {
    // Delivered signals are logged at debug level.
    server = await startTestServer({ MOBIUS_LOG: "info,mobius::client=debug" });
    ownerToken = await setupOwner(server.origin);
    for (const slug of await readdir(FIXTURES, { withFileTypes: true })) {
      if (!slug.isDirectory()) continue;
      const dir = join(server.dataDir, "apps", slug.name);
      await mkdir(dir, { recursive: true });
      await cp(join(FIXTURES, slug.name), dir, { recursive: true });
      const applied = await api("/api/apps/apply", { method: "POST", body: { slug: slug.name } });
      assert.equal(applied.status, 200, `apply ${slug.name}: ${applied.text}`);
      ids[slug.name] = applied.json.app.id;
    }
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "contract-server.log", browsers: [phone] }));

  step("the frame is painted as the original paints it: its theme variables, both palettes, full height", async (page) => {
    await page.goto(server.origin + "/");
    await signIn(page);
    await page.waitForURL(/\/chat\//);
    await page.waitForFunction(() => navigator.serviceWorker?.controller !== null, null, { timeout: 15_000 });
    await page.emulateMedia({ colorScheme: "light" });
    const frame = await openApp(page, "contract-probe", "Contract Probe");
    await frameOf(page, "Contract Probe").getByRole("status").getByText("Online").waitFor();
    const look = () =>
      frame.evaluate(() => {
        const css = getComputedStyle(document.documentElement);
        const names = ["bg", "surface", "surface2", "border", "border-light", "text", "muted", "accent", "accent-hover", "accent-dim", "accent-fg", "danger", "green", "font", "mono"];
        return {
          theme: document.documentElement.getAttribute("data-theme"),
          vars: Object.fromEntries(names.map((n) => [n, css.getPropertyValue(`--${n}`).trim()])),
          mobius: Object.fromEntries(names.map((n) => [n, css.getPropertyValue(`--mobius-${n}`).trim()])),
          heights: [document.documentElement.clientHeight, document.body.clientHeight, document.getElementById("root").clientHeight, document.querySelector(".probe").clientHeight],
          viewport: window.innerHeight,
        };
      });
    const light = await look();
    assert.equal(light.theme, "light");
    for (const [name, value] of Object.entries(light.vars)) {
      assert.ok(value, `--${name} is set`);
      assert.equal(light.mobius[name], value, `--mobius-${name} carries the same value as --${name}`);
    }
    for (const h of light.heights) assert.equal(h, light.viewport, `html, body, #root and a height:100% layout fill the frame: ${light.heights} vs ${light.viewport}`);
    // A sheet painted with --surface is opaque (it was transparent with --mobius-* alone).
    await frameOf(page, "Contract Probe").getByRole("button", { name: "Details" }).click();
    const sheet = frameOf(page, "Contract Probe").getByRole("region", { name: "Details sheet" });
    await sheet.waitFor();
    const sheetColour = await frame.evaluate(() => getComputedStyle(document.querySelector(".sheet")).backgroundColor);
    assert.notEqual(sheetColour, "rgba(0, 0, 0, 0)", "the sheet has a background");
    await screenshot(page, "contract-sheet-light-phone.png");
    // (This step is about paint: the sheet is closed without pointer hit-testing.)
    await frameOf(page, "Contract Probe").getByRole("button", { name: "Done" }).dispatchEvent("click");
    await sheet.waitFor({ state: "detached" });
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await eventually("the frame follows the dark palette", async () => {
      const now = await look();
      return now.theme === "dark" && now.vars.bg !== light.vars.bg ? now : null;
    });
    assert.equal(dark.mobius.surface, dark.vars.surface);
    await screenshot(page, "contract-dark-phone.png");
    await page.emulateMedia({ colorScheme: "light" });
  });

  step("window.mobius has the contract's members and shapes; wrong arguments reject with its errors", async (page) => {
    const frame = await openApp(page, "contract-probe", "Contract Probe");
    const out = await frame.evaluate(async () => {
      const m = window.mobius;
      const result = {};
      result.members = ["storage", "DurableWriteError", "durableWrite", "onDeadLetter", "runtimeFeatures", "createUseDocument", "signal", "capabilities", "chat", "nav", "split", "immersive"].filter((k) => m[k] === undefined);
      result.appId = m.appId;
      result.features = m.runtimeFeatures;
      result.aliases = m.durableWrite === m.storage.durableWrite && m.onDeadLetter === m.storage.onDeadLetter;
      let sync = null;
      m.onOnlineChange((v) => (sync ??= v))();
      result.onlineAtOnce = sync;
      result.set = await m.storage.set("shape/a.json", { n: 1 });
      const written = await m.durableWrite("shape/a.json", { n: 2 });
      result.durable = { durability: written.durability, path: written.path, hasWriteId: typeof written.writeId === "string", hasVersion: typeof written.version === "string" };
      await m.storage.setText("shape/note.md", "# Title", { contentType: "text/markdown" });
      await m.storage.setBlob("shape/pic.bin", new Blob([new Uint8Array([7, 8, 9])], { type: "image/x-test" }));
      const json = await m.storage.getWithVersion("shape/a.json");
      const text = await m.storage.getWithVersion("shape/note.md", "text");
      const blob = await m.storage.getWithVersion("shape/pic.bin", "blob");
      result.versions = [json.value, typeof json.version, text.value, typeof text.version, blob.value instanceof Blob, [...new Uint8Array(await blob.value.arrayBuffer())], blob.value.type];
      try {
        await m.durableWrite("shape/a.json", { n: 3 }, { ifMatch: '"stale"' });
      } catch (e) {
        result.conflict = { isClass: e instanceof m.DurableWriteError, name: e.name, code: e.code, status: e.status, path: e.path, retryable: e.retryable, refused: e.refusedValue, writeId: typeof e.writeId };
      }
      try {
        await m.durableWrite("shape/a.json", { n: 4 }, { ifNoneMatch: true });
      } catch (e) {
        result.createOnly = e.code;
      }
      const wrong = async (fn) => {
        try {
          await fn();
          return "resolved";
        } catch (e) {
          return `${e.name}:${e.code}`;
        }
      };
      result.wrong = [
        await wrong(() => m.storage.setText("x.txt", 5)),
        await wrong(() => m.storage.setBlob("x.bin", "text")),
        await wrong(() => m.storage.setBlob("x.bin", new Blob([new Uint8Array(25 * 1024 * 1024 + 1)]))),
        await wrong(() => m.storage.get(null)),
        await wrong(() => m.storage.getWithVersion("x.json", "xml")),
        await wrong(() => m.durableWrite("../outside.json", 1)),
        await wrong(() => m.capabilities.invoke("device.camera", {})),
        await wrong(() => m.capabilities.invoke("media.speech", "not an object")),
      ];
      // A storage method the contract does not have, asked for over the raw protocol.
      result.denied = await new Promise((resolve) => {
        const onMessage = (event) => {
          if (event.data?.type === "moebius:storage-rpc-result" && event.data.requestId === "raw-1") {
            window.removeEventListener("message", onMessage);
            resolve(event.data.error.code);
          }
        };
        window.addEventListener("message", onMessage);
        window.parent.postMessage({ type: "moebius:storage-rpc", requestId: "raw-1", method: "deleteEverything", args: [] }, "*");
      });
      return result;
    });
    assert.deepEqual(out.members, []);
    assert.equal(out.appId, String(ids["contract-probe"]));
    assert.deepEqual(out.features, { idleDocument: true });
    assert.equal(out.aliases, true);
    assert.equal(out.onlineAtOnce, true, "onOnlineChange calls back at once");
    assert.deepEqual(out.set, { synced: true });
    assert.deepEqual(out.durable, { durability: "synced", path: "shape/a.json", hasWriteId: true, hasVersion: true });
    assert.deepEqual(out.versions, [{ n: 2 }, "string", "# Title", "string", true, [7, 8, 9], "image/x-test"]);
    assert.deepEqual(out.conflict, { isClass: true, name: "DurableWriteError", code: "conflict", status: 412, path: "shape/a.json", retryable: true, refused: { n: 3 }, writeId: "string" });
    assert.equal(out.createOnly, "conflict");
    assert.deepEqual(out.wrong, [
      "TypeError:invalid_argument",
      "TypeError:invalid_argument",
      "StorageError:too_large",
      "TypeError:invalid_argument",
      "TypeError:invalid_argument",
      "StorageError:invalid_path",
      "CapabilityError:undeclared",
      "TypeError:invalid_request",
    ]);
    assert.equal(out.denied, "storage_method_denied");
    const stored = await fetch(`${server.origin}/api/storage/apps/${ids["contract-probe"]}/shape/note.md`, { headers: { Authorization: `Bearer ${ownerToken}` } });
    assert.match(stored.headers.get("content-type"), /^text\/markdown/);
    assert.deepEqual(problems, [], "nothing uncaught in the shell");
  });

  step("capabilities: the declared one is listed and answers 'unavailable' at once; nothing hangs", async (page) => {
    const frame = await openApp(page, "contract-probe", "Contract Probe");
    const out = await frame.evaluate(async () => {
      const c = window.mobius.capabilities;
      const started = Date.now();
      const session = c.open("media.speech", { text: "hello" });
      const result = await session.result.then(
        () => "resolved",
        (e) => `${e.name}:${e.code}:${e.capability}`,
      );
      return { list: c.list(), available: c.available("media.speech"), describe: c.describe("media.speech"), result, answeredWithinTimeout: Date.now() - started < 15_000 };
    });
    assert.deepEqual(out.list, ["media.speech"]);
    assert.equal(out.available, true);
    assert.equal(out.describe.reason, "Reads a todo aloud.");
    assert.equal(out.result, "NotSupportedError:unavailable:media.speech");
    assert.equal(out.answeredWithinTimeout, true, "the shell answered (the runtime's own 15 s guard did not fire)");
  });

  step("useDocument in two frames at once: every update lands, deletes too, and both converge", async (page) => {
    await openApp(page, "contract-probe", "Contract Probe");
    const other = await phone.context.newPage();
    try {
      await other.goto(`${server.origin}/apps/contract-probe/`);
      await frameOf(other, "Contract Probe").getByRole("heading").first().waitFor({ timeout: 30_000 });
      const a = await eventually("frame A", () => appFrame(page, ids["contract-probe"]));
      const b = await eventually("frame B", () => appFrame(other, ids["contract-probe"]));
      for (const f of [a, b]) await eventually("the document is loaded", () => f.evaluate(() => window.__probe?.status() === "ready"));
      await a.evaluate(() => window.__probe.add("seed"));
      await b.evaluate(() => window.__probe.refresh());
      // Both frames add five items each at the same time, and A deletes the seed meanwhile.
      await Promise.all([
        a.evaluate(() => Promise.all([...[1, 2, 3, 4, 5].map((i) => window.__probe.add(`A${i}`)), window.__probe.remove("seed")])),
        b.evaluate(() => Promise.all([1, 2, 3, 4, 5].map((i) => window.__probe.add(`B${i}`)))),
      ]);
      const texts = (list) => list.map((t) => t.text).sort();
      const expected = ["A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3", "B4", "B5"];
      const stored = await api(`/api/storage/apps/${ids["contract-probe"]}/todos.json`);
      assert.deepEqual(texts(stored.json), expected, "no update lost, and the delete held");
      for (const f of [a, b]) {
        await f.evaluate(() => window.__probe.refresh());
        assert.deepEqual(texts(await f.evaluate(() => window.__probe.value())), expected);
      }
      await frameOf(other, "Contract Probe").getByRole("list", { name: "Todos" }).getByText("A5").waitFor();
      await screenshot(other, "contract-two-frames-b.png");
    } finally {
      await other.close();
    }
  });

  step("offline: writes, a blob, a document update and a signal wait (across a reload) and land once back online", async (page) => {
    const id = ids["contract-probe"];
    let frame = await openApp(page, "contract-probe", "Contract Probe");
    const probe = frameOf(page, "Contract Probe");
    await phone.context.setOffline(true);
    try {
      await probe.getByRole("status").getByText("Offline").waitFor();
      const queued = await frame.evaluate(async () => {
        const m = window.mobius;
        const heard = [];
        m.onOnlineChange((v) => heard.push(v))();
        const write = await m.durableWrite("offline/doc.json", { saved: "offline" });
        const blob = await m.storage.setBlob("offline/photo.bin", new Blob([new Uint8Array(1024 * 1024).fill(3)], { type: "image/x-test" }));
        const update = await window.__probe.add("written offline");
        m.signal("went_offline", { screen: "list" });
        return { write: write.durability, blob, update: update.durability, status: window.__probe.status(), pending: await m.storage.pendingCount(), heard, online: m.online, readBack: await m.storage.get("offline/doc.json") };
      });
      assert.deepEqual(queued, { write: "queued", blob: { queued: true }, update: "queued", status: "saving", pending: 3, heard: [false], online: false, readBack: { saved: "offline" } });
      // The signal reaches the shell's durable queue within its 5 s flush.
      await eventually("the signal is queued in the shell", () => frame.evaluate(() => window.mobius.storage._pendingSignalCount().then((n) => n >= 1)));
      // A reload with the network still cut: everything queued is still there.
      await page.reload();
      await probe.getByRole("status").getByText("Offline").waitFor({ timeout: 30_000 });
      frame = await eventually("the frame after the reload", () => appFrame(page, id));
      await eventually("the app is running", () => frame.evaluate(() => typeof window.__probe === "object").catch(() => false));
      assert.equal(await frame.evaluate(() => window.mobius.storage.pendingCount()), 3);
      assert.equal(await frame.evaluate(() => window.mobius.storage._pendingSignalCount()), 1);
      await screenshot(page, "contract-offline-phone.png");
    } finally {
      await phone.context.setOffline(false);
    }
    await probe.getByRole("status").getByText("Online").waitFor({ timeout: 30_000 });
    await eventually("the outbox drained", () => frame.evaluate(() => window.mobius.storage.pendingCount().then((n) => n === 0)));
    assert.deepEqual((await api(`/api/storage/apps/${id}/offline/doc.json`)).json, { saved: "offline" });
    const photo = await fetch(`${server.origin}/api/storage/apps/${id}/offline/photo.bin`, { headers: { Authorization: `Bearer ${ownerToken}` } });
    assert.equal((await photo.arrayBuffer()).byteLength, 1024 * 1024);
    assert.equal(photo.headers.get("content-type"), "image/x-test");
    assert.ok((await api(`/api/storage/apps/${id}/todos.json`)).json.some((t) => t.text === "written offline"));
    await eventually("the signal was delivered", async () => (await frame.evaluate(() => window.mobius.storage._pendingSignalCount())) === 0);
    await eventually("the server logged the signal", () => server.logs().includes("went_offline"));
  });

  step("the system Back closes an in-app screen through onBack; Forward brings a reversible one back", async (page) => {
    await openApp(page, "contract-probe", "Contract Probe");
    const probe = frameOf(page, "Contract Probe");
    await probe.getByRole("button", { name: "Details" }).click();
    await probe.getByRole("region", { name: "Details sheet" }).waitFor();
    await probe.getByTestId("nav-log").getByText("owned").waitFor();
    await page.goBack();
    await probe.getByRole("region", { name: "Details sheet" }).waitFor({ state: "detached" });
    await probe.getByTestId("nav-log").getByText("owned,back").waitFor();
    assert.match(page.url(), new RegExp(`\\?app=${ids["contract-probe"]}$`), "Back closed the screen, not the app");
    await page.goForward();
    await probe.getByRole("region", { name: "Details sheet" }).waitFor();
    await probe.getByTestId("nav-log").getByText("owned,back,forward").waitFor();
    await probe.getByRole("button", { name: "Done" }).click();
    await probe.getByRole("region", { name: "Details sheet" }).waitFor({ state: "detached" });
    await page.waitForFunction(() => !history.state?.appNavDepth);
  });

  step("an app's own raw nav-push is acknowledged, its pop without an id works, and Back reaches it", async (page) => {
    await openApp(page, "legacy-nav", "Legacy Nav");
    const app = frameOf(page, "Legacy Nav");
    await app.getByRole("button", { name: "Open settings" }).click();
    await app.getByTestId("ack").getByText("acked").waitFor();
    assert.equal(await page.evaluate(() => history.state?.appNavDepth), 1);
    // Its own Back button: a pop without a request id.
    await app.getByRole("button", { name: "Back to home" }).click();
    await page.waitForFunction(() => !history.state?.appNavDepth);
    await app.getByRole("heading", { name: "Legacy home" }).waitFor();
    // The system Back instead: the app hears nav-back.
    await app.getByRole("button", { name: "Open settings" }).click();
    await page.waitForFunction(() => history.state?.appNavDepth === 1);
    await page.goBack();
    await app.getByRole("heading", { name: "Legacy home" }).waitFor();
    assert.match(page.url(), new RegExp(`\\?app=${ids["legacy-nav"]}$`));
  });

  step("a deep link names the app by slug with an intent: the app opens at that screen, uncovered only once it applied it", async (page) => {
    await page.goto(`${server.origin}/?app=legacy-nav&intent=settings`);
    // The slug is re-addressed by the app's id in place, keeping the intent.
    await page.waitForURL(new RegExp(`\\?app=${ids["legacy-nav"]}&intent=settings$`));
    await page.locator('iframe[title="Legacy Nav"]').waitFor({ state: "attached" });
    const app = frameOf(page, "Legacy Nav");
    await page.getByRole("status", { name: "Opening Legacy Nav" }).waitFor({ state: "detached", timeout: 30_000 });
    // Uncovered: the intent's screen is already there, never the home screen first.
    assert.equal(await app.getByRole("heading").first().textContent({ timeout: 1_000 }), "Legacy settings");
    await app.getByTestId("intent").getByText("settings").waitFor();
    await app.getByTestId("visible").getByText("visible").waitFor();
  });

  step("KaTeX's stylesheet and fonts load from /vendor/ into the opaque frame", async (page) => {
    const frame = await openApp(page, "katex-math", "KaTeX Math");
    const app = frameOf(page, "KaTeX Math");
    await app.getByTestId("fonts").getByText("loaded").waitFor();
    const font = await frame.evaluate(() => getComputedStyle(document.querySelector(".katex")).fontFamily);
    assert.match(font, /KaTeX_Main/);
    await screenshot(page, "contract-katex-phone.png");
  });

  step("offline.precache: opening the app has the service worker keep its listed static asset, served offline", async (page) => {
    const id = ids["contract-probe"];
    const asset = `/app-assets/by-id/${id}/logo.svg`;
    const summary = (await api(`/api/apps/${id}`)).json;
    assert.ok(summary.offline_precache.includes(asset), `the summary lists the asset: ${JSON.stringify(summary.offline_precache)}`);
    await openApp(page, "contract-probe", "Contract Probe");
    await eventually("the asset is kept", () => page.evaluate((u) => caches.open("mobius-app-assets").then((c) => c.match(u)).then((r) => !!r), asset));
    // /vendor/ files can be precached too; anything else (another origin, API routes) is not.
    const vendor = "/vendor/katex/fonts/KaTeX_Math-Italic.woff2";
    await page.evaluate(({ appId, urls }) => navigator.serviceWorker.controller.postMessage({ type: "moebius:precache-app", appId, urls }), {
      appId: id,
      urls: [asset, vendor, "https://elsewhere.example/x.png", "/api/chats"],
    });
    await eventually("the vendor file is kept", () => page.evaluate((u) => caches.open("mobius-app-assets").then((c) => c.match(u)).then((r) => !!r), vendor));
    assert.equal(await page.evaluate(() => caches.open("mobius-app-assets").then((c) => c.match("/api/chats")).then((r) => !!r)), false);
    await phone.context.setOffline(true);
    try {
      const answers = await page.evaluate(
        (urls) => Promise.all(urls.map((u) => fetch(u).then((r) => [r.status, r.headers.get("content-type")]))),
        [asset, vendor],
      );
      assert.deepEqual(answers, [
        [200, "image/svg+xml"],
        [200, "font/woff2"],
      ]);
    } finally {
      await phone.context.setOffline(false);
    }
  });

  test("no uncaught errors or CSP violations were logged on the phone", () => {
    assert.deepEqual(problems, []);
  });
});
