// Chat search in the drawer against the real server: type a query, see the hit with its match
// marked, tap it, and land in the chat on that message, highlighted, with older pages loaded.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR, as for journey.test.mjs.

import assert from "node:assert/strict";
import { after, before, describe } from "node:test";
import { PHONE, apiClient, openBrowser, screenshot, setupOwner, startTestServer, stepper, tearDown, watchProblems } from "./harness.mjs";

const STEP_TIMEOUT = 60_000;
const TOKEN_KEY = "mobius.token";
/** Messages in the long chat: the hit sits three pages (of 20) above the newest. */
const LONG_CHAT = 70;
const HIT_IDX = 4;

let server;
let phone;
let token;
let problems = [];

const step = stepper({ prefix: "search", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

before(async () => {
  server = await startTestServer();
  phone = await openBrowser(PHONE);
  problems = watchProblems(phone.page);
});

after(() => tearDown({ server, log: "server-search.log", browsers: [phone] }));

describe("search in the drawer (390×844)", () => {
  step("the owner has a long chat with one rare word far up, and another chat", async (page) => {
    token = await setupOwner(server.origin);
    const messages = Array.from({ length: LONG_CHAT }, (_, i) => ({
      role: i % 2 === 0 ? "user" : "assistant",
      ts: 1_700_000_000_000 + i * 60_000,
      ...(i % 2 === 0
        ? { content: i === HIT_IDX ? "Plant the <b>heliotrope</b> by the south wall" : `garden note ${i}` }
        : { blocks: [{ type: "text", content: `Noted, item ${i}. `.repeat(12), item_id: `t${i}` }] }),
    }));
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "garden", title: "Garden plans", messages } })).status, 201);
    const other = [{ role: "user", content: "Is heliotrope toxic to cats?", ts: 1_700_100_000_000 }];
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "pets", title: "Pets", messages: other } })).status, 201);
    await page.goto(server.origin + "/");
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.reload();
    await page.getByRole("button", { name: "Open chats" }).waitFor();
  });

  step("typing shows the hits grouped by chat with the match marked, as text", async (page) => {
    await page.getByRole("button", { name: "Open chats" }).click();
    const drawer = page.getByRole("dialog", { name: "Chats" });
    await drawer.getByRole("searchbox", { name: "Search chats" }).fill("helio");
    const results = drawer.getByRole("region", { name: "Search results" });
    const garden = results.getByRole("region", { name: "Garden plans" });
    await garden.waitFor();
    await results.getByRole("region", { name: "Pets" }).waitFor();
    assert.equal(await garden.locator("mark").first().textContent(), "heliotrope");
    assert.match(await garden.getByRole("button").first().textContent(), /<b>heliotrope<\/b>/, "the owner's markup is shown as text");
    assert.equal(await results.locator("b").count(), 0, "no HTML from a snippet is rendered");
    await screenshot(page, "search-results-phone.png");
  });

  step("tapping a hit opens the chat on that message, highlighted, older pages loaded", async (page) => {
    const drawer = page.getByRole("dialog", { name: "Chats" });
    await drawer.getByRole("region", { name: "Garden plans" }).getByRole("button").first().click();
    await page.waitForURL(/\/chat\/garden$/);
    const row = page.locator(`.row[data-idx="${HIT_IDX}"][data-hit]`);
    await row.waitFor();
    assert.match(await row.textContent(), /heliotrope/);
    await page.waitForFunction(
      (idx) => {
        const box = document.querySelector(".chat-scroll")?.getBoundingClientRect();
        const hit = document.querySelector(`.row[data-idx="${idx}"]`)?.getBoundingClientRect();
        return !!box && !!hit && hit.top >= box.top && hit.bottom <= box.bottom;
      },
      HIT_IDX,
    );
    assert.equal(await page.locator(".row[data-hit]").count(), 1, "only the hit is highlighted");
    await screenshot(page, "search-hit-phone.png");
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});
