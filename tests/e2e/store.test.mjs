// Apps from the phone, against the real server and a local fixture repository, at phone size:
// paste a link, review what the app asks for, install, open; publish an update to the fixture
// repository, see "Update available", preview it (version, changes, what it newly asks for),
// apply; restore the old version from the history; browse the store (a local catalog index)
// and open its review card. Screenshots go to tests/artifacts/.
//
// Environment: MOBIUS_BIN, MOBIUS_FRONTEND_DIR (as journey.test.mjs); the server compiles apps
// with frontend/node_modules and frontend/public (appBuildEnv).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  accessibilityProblems,
  apiClient,
  assertFitsAndLegible,
  appBuildEnv,
  openBrowser,
  labelMismatches,
  PHONE,
  screenshot,
  signInAsOwner,
  startTestServer,
  setupOwner,
  stepper,
  tearDown,
  watchProblems,
  smallTargets,
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
for (const [name, dir] of Object.entries(appBuildEnv())) {
  if (!existsSync(dir)) throw new Error(`${name}=${dir} does not exist: run npm ci in frontend/ (the server compiles apps with it)`);
}

const manifest = (version, extra = {}) =>
  JSON.stringify({ id: "notes", name: "Notes", version, description: "Keeps notes on your phone.", entry: "index.jsx", author: "Ada Author", theme_color: "#0f766e", ...extra }, null, 2);

const index = (title) => `export default function Notes() {
  return (
    <main style={{ padding: 16, fontFamily: "system-ui" }}>
      <h1>${title}</h1>
    </main>
  );
}
`;

let server;
let phone;
let ownerApiToken;
let fixture;
let catalogDir;
let notesId;
let problems = [];

const git = (...args) =>
  execFileSync("git", ["-c", "user.name=Ada Author", "-c", "user.email=ada@example.com", "-c", "init.defaultBranch=main", ...args], { cwd: fixture });

async function publish(version, title, extra = {}, message = `Release ${version}`) {
  await writeFile(join(fixture, "mobius.json"), manifest(version, extra));
  await writeFile(join(fixture, "index.jsx"), index(title));
  git("add", "-A");
  git("commit", "-qm", message);
}

const api = apiClient(() => server.origin, () => ownerApiToken);
const step = stepper({ prefix: "store", timeout: STEP_TIMEOUT, page: () => phone.page });
const frameOf = (page, name) => page.frameLocator(`iframe[title="${name}"]`);

async function assertAccessible(page, view) {
  const found = await accessibilityProblems(page, { exclude: [".app-frame"] });
  assert.deepEqual(found, [], `axe found serious/critical problems on ${view}`);
}

async function openAppsView(page) {
  await page.getByRole("button", { name: "Open chats" }).click();
  await page.getByRole("dialog", { name: "Chats" }).getByRole("button", { name: /^Apps & store/ }).click();
  await page.getByRole("tab", { name: "Installed" }).waitFor();
}

const notesRow = (page) => page.getByRole("list", { name: "Installed apps" }).getByRole("listitem").filter({ hasText: "Notes" });

describe("apps from the phone (real server, local fixture repository)", () => {
  before(async () => {
    fixture = await mkdtemp(join(tmpdir(), "mobius-e2e-fixture-"));
    catalogDir = await mkdtemp(join(tmpdir(), "mobius-e2e-catalog-"));
    git("init", "-q");
    await publish("1.0.0", "Release one", { permissions: { share_with_apps: "read" } }, "First release");
    server = await startTestServer();
    ownerApiToken = await setupOwner(server.origin);
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(async () => {
    await tearDown({ server, log: "store-server.log", browsers: [phone] });
    await rm(fixture, { recursive: true, force: true });
    await rm(catalogDir, { recursive: true, force: true });
  });

  step("a pasted link shows the review card, and nothing is installed before Install", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    await openAppsView(page);
    await assertFitsAndLegible(page, "the Apps view");
    await page.getByLabel("Install from a link").fill(fixture);
    await page.getByRole("button", { name: "Review", exact: true }).click();
    const card = page.getByRole("dialog", { name: "Review the app" });
    await card.getByRole("heading", { name: "Notes" }).waitFor();
    await card.getByText("Version 1.0.0 · by Ada Author").waitFor();
    await card.getByText("Keeps notes on your phone.").waitFor();
    await card.getByText("Share its data with other apps").waitFor();
    await card.getByText(fixture).waitFor();
    assert.match(page.url(), /\/install\?source=/);
    assert.equal((await api("/api/apps")).json.length, 0, "the review installed nothing");
    await screenshot(page, "store-review-phone.png");
    await assertAccessible(page, "the review card");
  });

  step("install opens the app full screen", async (page) => {
    const card = page.getByRole("dialog", { name: "Review the app" });
    await card.getByRole("button", { name: "Install" }).click();
    await frameOf(page, "Notes").getByRole("heading", { name: "Release one" }).waitFor({ timeout: 60_000 });
    const apps = (await api("/api/apps")).json;
    assert.equal(apps.length, 1);
    notesId = apps[0].id;
    assert.equal(apps[0].source_url, fixture);
    await screenshot(page, "store-installed-app-phone.png");
    await page.getByRole("button", { name: "Back" }).click();
    await page.getByRole("list", { name: "Installed apps" }).waitFor();
  });

  step("a published update shows as available, its preview says what changes, and it applies", async (page) => {
    await publish("1.1.0", "Release two", { permissions: { share_with_apps: "read", cross_app_access: "read" } }, "Read other apps' notes");
    await page.getByRole("button", { name: "Check for updates" }).click();
    const mark = notesRow(page).getByRole("button", { name: "Update available" });
    await mark.waitFor();
    await screenshot(page, "store-update-available-phone.png");
    await mark.click();
    const sheet = page.getByRole("dialog", { name: "Update Notes" });
    await sheet.getByText("1.0.0 → 1.1.0").waitFor();
    await sheet.getByText("Read other apps' notes").first().waitFor();
    await sheet.getByRole("heading", { name: "It asks for something new" }).waitFor();
    await sheet.getByText("Read other apps' data").waitFor();
    await sheet.getByText(/files? changed/).waitFor();
    await screenshot(page, "store-update-preview-phone.png");
    await assertAccessible(page, "the update preview");
    await sheet.getByRole("button", { name: "Apply update" }).click();
    await page.getByText("Updated “Notes” to 1.1.0").waitFor({ timeout: 60_000 });
    assert.equal((await api(`/api/apps/${notesId}`)).json.version, "1.1.0");
    await notesRow(page).getByRole("button", { name: "Open" }).click();
    await frameOf(page, "Notes").getByRole("heading", { name: "Release two" }).waitFor({ timeout: 60_000 });
    await page.getByRole("button", { name: "Back" }).click();
  });

  step("the history restores the old version in one tap", async (page) => {
    await notesRow(page).getByRole("button", { name: /^Notes/ }).click();
    const versions = notesRow(page).getByRole("list").filter({ hasText: "Version 1.0.0" });
    await versions.waitFor();
    await notesRow(page).getByText("Running").waitFor();
    await screenshot(page, "store-history-phone.png");
    await notesRow(page).getByRole("button", { name: /^Restore version 1\.0\.0/ }).click();
    await page.getByText("Restored “Notes” 1.0.0").waitFor({ timeout: 60_000 });
    assert.equal((await api(`/api/apps/${notesId}`)).json.version, "1.0.0");
    await notesRow(page).getByRole("button", { name: "Open", exact: true }).first().click();
    await frameOf(page, "Notes").getByRole("heading", { name: "Release one" }).waitFor({ timeout: 60_000 });
    await page.getByRole("button", { name: "Back" }).click();
  });

  step("the store lists a catalog, searches it and opens the same review card", async (page) => {
    const catalog = join(catalogDir, "catalog.json");
    await writeFile(
      catalog,
      JSON.stringify({
        schema: 1,
        apps: [
          { id: "notes", name: "Notes", description: "Keeps notes on your phone.", source: fixture, manifest: { version: "1.1.0" } },
          { id: "tasks", name: "Tasks", description: "A to-do list.", source: fixture, keywords: ["todo"] },
        ],
      }),
    );
    const set = await api("/api/catalog/indexes", { method: "PUT", body: { indexes: [catalog] } });
    assert.equal(set.status, 200, set.text);
    await page.getByRole("tab", { name: "Store" }).click();
    const list = page.getByRole("list", { name: "Store apps" });
    await list.getByText("A to-do list.").waitFor();
    await page.getByRole("searchbox", { name: "Search the store" }).fill("todo");
    await list.getByText("Keeps notes on your phone.").waitFor({ state: "detached" });
    await screenshot(page, "store-catalog-phone.png");
    await assertFitsAndLegible(page, "the store");
    // Voice control says what it sees: each button's name holds its label ("Get", "Open").
    assert.deepEqual(await labelMismatches(page), []);
    assert.deepEqual(await smallTargets(page), [], "every control of the store is at least 44×44 px");
    await list.getByRole("button", { name: "Get Tasks" }).click();
    const card = page.getByRole("dialog", { name: "Review the app" });
    await card.getByRole("heading", { name: "Notes" }).waitFor();
    await card.getByText(/already installed/).waitFor();
    await card.getByRole("button", { name: "Cancel" }).click();
    await card.waitFor({ state: "detached" });
    assert.deepEqual(problems, [], `page problems: ${problems.join("\n")}`);
  });
});
