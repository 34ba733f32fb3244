// Drawer benchmark (scripts/bench, "scale" section): the time from navigation to an interactive
// drawer on a server that already holds many chats, in headless Chromium with its CPU slowed
// 4× (CDP `Emulation.setCPUThrottlingRate`), a wide window (the drawer is the sidebar), cold
// loads in fresh profiles with the service worker off. Prints min / median / max of 3.
//
//   MOBIUS_URL=http://127.0.0.1:8000 MOBIUS_TOKEN=<owner token> node scripts/bench-drawer.mjs

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/* global document, requestAnimationFrame -- used inside page.evaluate, which runs in the browser */

const HERE = dirname(fileURLToPath(import.meta.url));
const E2E = resolve(HERE, "..", "..", "tests", "e2e");
const RUNS = 3;
const CPU_SLOWDOWN = 4;

const origin = (process.env.MOBIUS_URL ?? "").replace(/\/$/, "");
const token = process.env.MOBIUS_TOKEN ?? "";
if (!origin || !token) {
  console.error("set MOBIUS_URL and MOBIUS_TOKEN");
  process.exit(2);
}
const core = join(E2E, "node_modules", "playwright-core", "index.mjs");
if (!existsSync(core)) throw new Error("playwright-core is missing: run `npm ci` in tests/e2e");
const { chromium } = await import(pathToFileURL(core).href);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
const times = [];
let rendered = 0;
try {
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: "block" });
    await context.addInitScript((t) => localStorage.setItem("mobius.token", t), token);
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: CPU_SLOWDOWN });
    await page.goto(`${origin}/settings`, { waitUntil: "commit" });
    const rows = page.locator(".sidebar .chat-row .chat-link");
    await rows.first().waitFor({ timeout: 60_000 });
    // Interactive: the list is painted and its first row takes focus in the next frame.
    const ms = await page.evaluate(
      () =>
        new Promise((done) => {
          const row = document.querySelector(".sidebar .chat-row .chat-link");
          row?.focus();
          requestAnimationFrame(() => done(document.activeElement === row ? performance.now() : -1));
        }),
    );
    if (ms < 0) throw new Error("the drawer's first row could not take focus");
    rendered = await rows.count();
    times.push(ms);
    await context.close();
  }
} finally {
  await browser.close();
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`rows in the DOM: ${rendered}`);
console.log(`${sorted[0].toFixed(0)} / ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} / ${sorted[sorted.length - 1].toFixed(0)} (${rendered} rows rendered)`);
