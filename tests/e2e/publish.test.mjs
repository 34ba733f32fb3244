// Published pages against the real server: the owner publishes an app from its menu in the drawer
// (a phone, signed in); a visitor in a fresh browser, signed out, opens the link and sees the app
// with its data as it was when published; a write shows the read-only error the app displays; the
// page can reach nothing but its own data and is painted with the owner's theme; Settings › Published pages lists it, and Unpublish makes
// the link a 404 at once.
//
// Environment: as apps.test.mjs (MOBIUS_BIN, MOBIUS_FRONTEND_DIR, the app build's node_modules).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import { apiClient, appBuildEnv, DESKTOP, openBrowser, PHONE, screenshot, setupOwner, signInAsOwner, startTestServer, stepper, tearDown } from "./harness.mjs";

const GREEN = "#15803d";
/** The document's painted `--accent`. */
const accent = (page) => page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim());

const BOARD_MANIFEST = { id: "board", name: "Board", version: "1.0.0", description: "A shopping list.", entry: "index.jsx" };

// Reads its list from storage, and shows the error a write gets.
const BOARD_JSX = `import { useEffect, useState } from "react";

export default function Board() {
  const [items, setItems] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    window.mobius.storage.get("board.json").then((b) => setItems(b ? b.items : []), (e) => setError(e.message));
  }, []);
  const add = async () => {
    try {
      const next = [...(items || []), "Eggs"];
      await window.mobius.storage.set("board.json", { items: next });
      setItems(next);
    } catch (e) {
      setError(e.code + ": " + e.message);
    }
  };
  return (
    <main style={{ padding: 16, fontFamily: "system-ui" }}>
      <h1>Board</h1>
      {items === null ? <p>Loading…</p> : <ul aria-label="Items">{items.map((i) => <li key={i}>{i}</li>)}</ul>}
      <button type="button" onClick={add}>Add eggs</button>
      {error && <p role="alert">{error}</p>}
    </main>
  );
}
`;

for (const [name, dir] of Object.entries(appBuildEnv())) {
  if (!existsSync(dir)) throw new Error(`${name}=${dir} does not exist: run npm ci in frontend/ (the server compiles apps with it)`);
}

let server;
let owner;
let visitor;
let ownerToken;
let boardId;
let link;

const api = apiClient(() => server.origin, () => ownerToken);
const step = stepper({ prefix: "publish", timeout: 120_000, page: () => owner.page });

describe("published pages (real server, a signed-out visitor)", () => {
  before(async () => {
    server = await startTestServer();
    ownerToken = await setupOwner(server.origin);
    const dir = join(server.dataDir, "apps", "board");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "mobius.json"), JSON.stringify(BOARD_MANIFEST, null, 2));
    await writeFile(join(dir, "index.jsx"), BOARD_JSX);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "board" } });
    assert.equal(applied.status, 200, `apply board: ${applied.text}`);
    boardId = applied.json.app.id;
    const seeded = await api(`/api/storage/apps/${boardId}/board.json`, { method: "PUT", body: { items: ["Milk", "Bread"] } });
    assert.equal(seeded.status, 204, seeded.text);
    // The owner's theme: the page is to be painted with it.
    await writeFile(join(server.dataDir, "theme", "theme.css"), `:root {\n  --light-accent: ${GREEN};\n}\n`);
    const themed = await api("/api/theme/apply", { method: "POST", body: {} });
    assert.equal(themed.status, 200, themed.text);
    owner = await openBrowser(PHONE);
    visitor = await openBrowser(DESKTOP);
  });

  after(() => tearDown({ server, log: "publish-server.log", browsers: [owner, visitor] }));

  step("the owner publishes the app from its menu and gets a link", async (page) => {
    await page.goto(server.origin + "/");
    await signInAsOwner(page);
    await page.waitForURL(/\/chat\//);
    await page.waitForFunction((green) => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim() === green, GREEN);
    await page.getByRole("button", { name: "Open chats" }).click();
    const apps = page.getByRole("dialog", { name: "Chats" }).getByRole("region", { name: "Apps" });
    await apps.getByRole("button", { name: "Options for Board" }).click();
    await page.getByRole("menuitem", { name: "Publish…" }).click();
    const sheet = page.getByRole("dialog", { name: "Publish Board" });
    await sheet.getByRole("button", { name: "Publish", exact: true }).click();
    const field = sheet.getByRole("textbox");
    await field.waitFor();
    link = await field.inputValue();
    assert.match(link, new RegExp(`^${server.origin}/sites/[A-Za-z0-9_-]{43}/$`));
    await screenshot(page, "publish-sheet-phone.png");
    // Changed after publishing: the page keeps the snapshot.
    const changed = await api(`/api/storage/apps/${boardId}/board.json`, { method: "PUT", body: { items: ["Changed later"] } });
    assert.equal(changed.status, 204, changed.text);
  });

  step("a signed-out visitor sees the app and its data, read only, and nothing else of the server", async () => {
    const page = visitor.page;
    const response = await page.goto(link);
    assert.equal(response.status(), 200);
    const items = page.getByRole("list", { name: "Items" });
    await items.getByText("Milk").waitFor();
    await items.getByText("Bread").waitFor();
    assert.equal(await page.getByText("Changed later").count(), 0, "the snapshot, not the data as it is now");
    await page.getByRole("button", { name: "Add eggs" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.textContent(), /^read_only: .*read-only copy/);
    assert.equal(await items.getByText("Eggs").count(), 0);
    assert.equal(await accent(page), GREEN, "the page is painted with the owner's theme");
    // No token of the owner's or the app's in the page, and the API is out of its reach.
    const html = await page.content();
    assert.ok(!html.includes(ownerToken), "the owner's token is not in the page");
    const reach = await page.evaluate(async (origin) => {
      try {
        await fetch(origin + "/api/apps");
        return "reached";
      } catch {
        return "blocked";
      }
    }, server.origin);
    assert.equal(reach, "blocked", "the page's CSP lets it connect to its own data only");
    assert.equal(await page.evaluate(() => window.origin), "null", "an opaque origin");
    await screenshot(page, "publish-visitor-desktop.png");
  });

  step("Settings lists the page, and Unpublish makes the link a 404 at once", async (page) => {
    await page.goto(server.origin + "/settings/published");
    const list = page.getByRole("list", { name: "Published pages" });
    await list.getByText("Board").waitFor();
    await screenshot(page, "publish-settings-phone.png");
    await list.getByRole("button", { name: "Unpublish Board" }).click();
    await page.getByText("Nothing is published.").waitFor();
    const response = await visitor.page.reload();
    assert.equal(response.status(), 404);
    const sites = await api("/api/published-sites");
    assert.deepEqual(sites.json.sites, []);
  });
});
