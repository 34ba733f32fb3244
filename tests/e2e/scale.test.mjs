// A long history in the browser against the real server: a drawer of 600 chats that loads in
// pages as it scrolls and keeps only the rows near the screen in the page, a chat pinned
// elsewhere (its page not loaded yet) appearing at once, and a 300-message chat scrolled back to
// its first message — neither list losing nor repeating an item.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR, as for journey.test.mjs.

import assert from "node:assert/strict";
import { resolve } from "node:path";
import { after, before, describe } from "node:test";
import { ARTIFACTS, DESKTOP, OWNER, apiClient, openBrowser, requireEnv, saveArtifact, screenshot, startServer, stepper, watchProblems } from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const TOKEN_KEY = "mobius.token";
const CHATS = 600;
const LONG_CHAT = 300;
/** Rows the drawer may hold in the page at once (a screenful and its overscan, not 600). */
const MAX_ROWS_IN_DOM = 120;

let server;
let desk;
let token;
let problems = [];
/** The drawer's order as the server lists it (titles). */
let order = [];

const step = stepper({ prefix: "scale", timeout: STEP_TIMEOUT, page: () => desk.page });
const api = apiClient(() => server.origin, () => token);

before(async () => {
  const bin = requireEnv("MOBIUS_BIN", "point it at the mobius server binary");
  const frontendDir = resolve(requireEnv("MOBIUS_FRONTEND_DIR", "point it at the built frontend (frontend/dist)"));
  server = await startServer({ bin, frontendDir });
  desk = await openBrowser(DESKTOP);
  problems = watchProblems(desk.page);
});

after(async () => {
  await desk?.close();
  if (server) {
    await saveArtifact(ARTIFACTS, "server-scale.log", server.logs());
    await server.stop();
  }
});

const title = (i) => `Chat ${String(i).padStart(4, "0")}`;

/** Titles of the chat rows in the sidebar's Recent section, in page order. */
const recentTitles = (page) =>
  page.evaluate(() => {
    const sections = [...document.querySelectorAll(".sidebar .drawer-section")];
    const recent = sections.find((s) => s.querySelector(".drawer-section-title")?.textContent === "Recent");
    return [...(recent?.querySelectorAll(".chat-row .chat-title") ?? [])].map((el) => el.textContent);
  });

describe("a long history (1280×800)", () => {
  step(`the owner has ${CHATS} chats and one of ${LONG_CHAT} messages`, async (page) => {
    const setup = await fetch(`${server.origin}/api/auth/setup`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(OWNER),
    });
    assert.equal(setup.status, 200);
    token = (await setup.json()).access_token;
    const messages = Array.from({ length: LONG_CHAT }, (_, i) => ({
      role: i % 2 === 0 ? "user" : "assistant",
      ts: 1_700_000_000_000 + i * 60_000,
      ...(i % 2 === 0 ? { content: `Question number ${i}` } : { blocks: [{ type: "text", content: `Answer number ${i}. `.repeat(1 + (i % 7)) }] }),
    }));
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "long", title: "Long chat", messages } })).status, 201);
    for (let i = 0; i < CHATS; i++) {
      const body = { id: `c${i}`, title: title(i), messages: [{ role: "user", content: `hello ${i}`, ts: 1_700_000_000_000 + i }] };
      assert.equal((await api("/api/chats", { method: "POST", body })).status, 201);
    }
    const list = (await api("/api/chats")).json;
    order = list.filter((c) => c.pinned_at === null && c.has_messages).map((c) => c.title);
    assert.equal(order.length, CHATS + 1);
    await page.goto(server.origin + "/");
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.goto(server.origin + "/settings");
    await page.locator(".sidebar .chat-row").first().waitFor();
  });

  step("the drawer starts with one page, rendered in part", async (page) => {
    const rows = await page.locator(".sidebar .chat-row").count();
    assert.ok(rows > 0 && rows <= MAX_ROWS_IN_DOM, `${rows} rows in the page`);
    const first = await recentTitles(page);
    assert.deepEqual(first, order.slice(0, first.length));
  });

  step("a chat pinned elsewhere, its page not loaded yet, shows among the pinned at once", async (page) => {
    const deep = order[order.length - 3];
    const id = `c${Number(deep.slice(5))}`;
    const pinned = await api(`/api/chats/${id}`, { method: "PATCH", body: { pinned: true } });
    assert.equal(pinned.status, 200);
    const section = page.getByRole("region", { name: "Pinned" });
    await section.getByRole("button", { name: deep, exact: true }).waitFor();
    // Unpin again: it goes back to where it sorts, which the drawer loads when it gets there.
    assert.equal((await api(`/api/chats/${id}`, { method: "PATCH", body: { pinned: false } })).status, 200);
    await section.waitFor({ state: "detached" });
  });

  step(`scrolling the drawer to its end shows all ${CHATS + 1} chats once each, in order`, async (page) => {
    const seen = new Map();
    let maxRows = 0;
    for (let round = 0; round < 2_000; round++) {
      const titles = await recentTitles(page);
      maxRows = Math.max(maxRows, titles.length);
      // What is rendered is always a run of the server's order: nothing missing or doubled in it.
      const at = order.indexOf(titles[0]);
      assert.ok(at >= 0, `unknown first row ${titles[0]}`);
      assert.deepEqual(titles, order.slice(at, at + titles.length), `round ${round}`);
      for (const t of titles) seen.set(t, (seen.get(t) ?? 0) + 1);
      const done = await page.evaluate(() => {
        const box = document.querySelector(".sidebar .drawer-scroll");
        const before = box.scrollTop;
        box.scrollTop += box.clientHeight * 0.8;
        return box.scrollTop === before && !document.querySelector(".sidebar [role=status]");
      });
      if (done && seen.size === order.length) break;
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    }
    assert.equal(seen.size, order.length, `saw ${seen.size} of ${order.length}`);
    assert.ok(maxRows <= MAX_ROWS_IN_DOM, `${maxRows} rows rendered at once`);
    await screenshot(page, "scale-drawer-end.png");
  });

  step(`the ${LONG_CHAT}-message chat opens at its newest message and scrolls back to its first`, async (page) => {
    await page.locator(".sidebar").getByRole("button", { name: "Long chat", exact: true }).click();
    await page.waitForURL(/\/chat\/long$/);
    await page.locator(`.row[data-idx="${LONG_CHAT - 1}"]`).waitFor();
    assert.equal(await page.locator(`.row[data-idx="0"]`).count(), 0, "only the newest page at first");
    const seen = new Set();
    let most = 0;
    for (let round = 0; round < 1_000 && !seen.has(0); round++) {
      const idx = await page.evaluate(() => {
        const box = document.querySelector(".chat-scroll:not([hidden])");
        return [...box.querySelectorAll(".row[data-idx]")].map((el) => Number(el.getAttribute("data-idx")));
      });
      // What is on the page is always a run of consecutive messages, however far back.
      assert.deepEqual(idx, Array.from({ length: idx.length }, (_, i) => idx[0] + i), `round ${round}`);
      most = Math.max(most, idx.length);
      for (const i of idx) seen.add(i);
      await page.evaluate(() => {
        const box = document.querySelector(".chat-scroll:not([hidden])");
        box.dispatchEvent(new WheelEvent("wheel", { deltaY: -600 }));
        box.scrollTop = Math.max(0, box.scrollTop - box.clientHeight * 0.8);
      });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    }
    assert.equal(seen.size, LONG_CHAT, "every message was on screen once scrolled past");
    assert.ok(most <= 200, `${most} messages in the page at once`);
    await page.getByRole("button", { name: "Jump to latest" }).click();
    await page.getByRole("region", { name: "Conversation history" }).waitFor({ state: "detached" });
    await page.locator(`.row[data-idx="${LONG_CHAT - 1}"]`).waitFor();
  });

  step("Jump to start opens the first message; scrolling down reaches the latest without a gap", async (page) => {
    await page.reload();
    await page.locator(`.row[data-idx="${LONG_CHAT - 1}"]`).waitFor();
    // The newest page is all that is loaded: scroll up to reach its "Jump to start".
    await page.locator(".chat-scroll").evaluate((box) => {
      box.dispatchEvent(new WheelEvent("wheel", { deltaY: -600 }));
      box.scrollTop = 0;
    });
    await page.getByRole("button", { name: "Jump to start" }).click();
    const history = page.getByRole("region", { name: "Conversation history" });
    await history.locator('.row[data-idx="0"]').waitFor();
    const seen = new Set();
    for (let round = 0; round < 1_000 && !seen.has(LONG_CHAT - 1); round++) {
      const idx = await history.evaluate((box) => [...box.querySelectorAll(".row[data-idx]")].map((el) => Number(el.getAttribute("data-idx"))));
      // The window is always a run of consecutive messages, and bounded.
      assert.deepEqual(idx, Array.from({ length: idx.length }, (_, i) => idx[0] + i), `round ${round}`);
      assert.ok(idx.length <= 160, `${idx.length} rows in the window`);
      for (const i of idx) seen.add(i);
      await history.evaluate((box) => {
        box.scrollTop += box.clientHeight * 0.8;
      });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    }
    assert.equal(seen.size, LONG_CHAT, "every message was on screen once scrolled past");
    await history.getByRole("button", { name: "Jump to latest" }).click();
    await history.waitFor({ state: "detached" });
    await page.locator(`.row[data-idx="${LONG_CHAT - 1}"]`).waitFor();
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});
