// Frontend benchmark: (1) the gzipped size of the initial route's JS + CSS in dist/, (2) the
// time from navigation to an interactive chat view holding 200 messages, in headless Chromium
// (median of 5 cold loads, each in a fresh browser profile with the service worker off), and
// (3) with a server it started itself (it writes the theme file), the time from
// `POST /api/theme/apply` to an open page painted with the new theme (target ≤ 300 ms).
//
//   node scripts/bench.mjs                     size only (needs a build: npm run build)
//   MOBIUS_URL=http://127.0.0.1:8000 MOBIUS_TOKEN=<owner token> node scripts/bench.mjs
//   MOBIUS_BIN=/path/to/mobius node scripts/bench.mjs   starts a throwaway server itself
//
// The chat is seeded through `POST /api/chats {id, title, messages}`. Chromium is Debian's
// /usr/bin/chromium driven by playwright-core from tests/e2e (run `npm ci` there first).

import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

/* global document, getComputedStyle, requestAnimationFrame -- used inside page.evaluate, which runs in the browser */

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = resolve(HERE, "..", "dist");
const E2E = resolve(HERE, "..", "..", "tests", "e2e");
const RUNS = 5;
const MESSAGES = 200;

function initialRouteSize() {
  const html = readFileSync(join(DIST, "index.html"), "utf8");
  const refs = new Set();
  for (const match of html.matchAll(/<script[^>]+src="([^"]+)"/g)) refs.add(match[1]);
  for (const match of html.matchAll(/<link[^>]+rel="(?:stylesheet|modulepreload)"[^>]+href="([^"]+)"/g)) refs.add(match[1]);
  for (const match of html.matchAll(/<link[^>]+href="([^"]+)"[^>]+rel="(?:stylesheet|modulepreload)"/g)) refs.add(match[1]);
  const files = [...refs].filter((r) => r.startsWith("/assets/"));
  let raw = 0;
  let gzip = 0;
  const rows = files.map((file) => {
    const bytes = readFileSync(join(DIST, file));
    const zipped = gzipSync(bytes, { level: 9 }).length;
    raw += bytes.length;
    gzip += zipped;
    return { file, raw: bytes.length, gzip: zipped };
  });
  return { rows, raw, gzip };
}

const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

function seedMessages() {
  const messages = [];
  for (let i = 0; i < MESSAGES / 2; i++) {
    messages.push({ role: "user", content: `Question ${i + 1}: could you look at part ${i + 1} of the app?` });
    messages.push({
      role: "assistant",
      content:
        `Here is what I found in part ${i + 1}.\n\n- The handler returns early on **empty input**.\n- The test covers the happy path only.\n\n` +
        "```ts\nexport function parse(input: string): number {\n  return input.trim() === \"\" ? 0 : Number(input);\n}\n```\n\n| case | result |\n|---|---|\n| empty | 0 |\n| \"42\" | 42 |",
    });
  }
  return messages;
}

async function api(origin, token, path, body) {
  const response = await fetch(origin + path, {
    method: body ? "POST" : "GET",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

async function withServer(run) {
  if (process.env.MOBIUS_URL && process.env.MOBIUS_TOKEN) return run(process.env.MOBIUS_URL.replace(/\/$/, ""), process.env.MOBIUS_TOKEN);
  if (!process.env.MOBIUS_BIN) return null;
  const { startServer } = await import(pathToFileURL(join(E2E, "harness.mjs")).href);
  const server = await startServer({ bin: process.env.MOBIUS_BIN, frontendDir: DIST });
  try {
    const { access_token } = await (
      await fetch(`${server.origin}/api/auth/setup`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ username: "bench", password: "bench password 123" }),
      })
    ).json();
    return await run(server.origin, access_token, server.dataDir);
  } finally {
    await server.stop();
  }
}

/** Theme change → restyled page, RUNS times on one open page (ms, node's clock and the page's). */
async function themeRestyleTimes(browser, origin, token, dataDir, chatId) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, serviceWorkers: "block" });
  await context.addInitScript((t) => localStorage.setItem("mobius.token", t), token);
  const page = await context.newPage();
  await page.goto(`${origin}/chat/${chatId}`);
  await page.getByRole("textbox", { name: "Message", exact: true }).waitFor({ timeout: 30_000 });
  const times = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const colour = `#1${i}3${i}5${i}`;
      writeFileSync(join(dataDir, "theme", "theme.css"), `:root { --light-accent: ${colour}; --dark-accent: ${colour}; }\n`);
      const started = Date.now();
      await api(origin, token, "/api/theme/apply", {});
      const painted = await page.waitForFunction(
        (want) => (getComputedStyle(document.documentElement).getPropertyValue("--accent").trim() === want ? Date.now() : false),
        colour,
        { polling: "raf", timeout: 10_000 },
      );
      times.push((await painted.jsonValue()) - started);
    }
  } finally {
    await context.close();
  }
  return times;
}

async function chatLoadTimes(origin, token, dataDir) {
  const id = randomUUID();
  await api(origin, token, "/api/chats", { id, title: "Benchmark chat", messages: seedMessages() });
  const core = join(E2E, "node_modules", "playwright-core", "index.mjs");
  if (!existsSync(core)) throw new Error("playwright-core is missing: run `npm ci` in tests/e2e");
  const { chromium } = await import(pathToFileURL(core).href);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const times = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, serviceWorkers: "block" });
      await context.addInitScript((t) => localStorage.setItem("mobius.token", t), token);
      const page = await context.newPage();
      await page.goto(`${origin}/chat/${id}`, { waitUntil: "commit" });
      await page.locator(".row-assistant").last().waitFor({ timeout: 30_000 });
      await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
      // Interactive: the newest reply is painted, Markdown rendered, and the composer focusable.
      await page.locator(".row-assistant .md table").last().waitFor({ timeout: 30_000 });
      const ms = await page.evaluate(
        () =>
          new Promise((done) => {
            const box = document.querySelector("textarea");
            box?.focus();
            requestAnimationFrame(() => done(document.activeElement === box ? performance.now() : -1));
          }),
      );
      if (ms < 0) throw new Error("the composer could not take focus");
      times.push(ms);
      await context.close();
    }
    if (dataDir) themeTimes = await themeRestyleTimes(browser, origin, token, dataDir, id);
  } finally {
    await browser.close();
  }
  return times;
}

const size = initialRouteSize();
console.log("Initial route (gzip -9):");
for (const row of size.rows) console.log(`  ${row.file.padEnd(36)} ${kb(row.raw).padStart(10)} raw  ${kb(row.gzip).padStart(9)} gzip`);
console.log(`  ${"total".padEnd(36)} ${kb(size.raw).padStart(10)} raw  ${kb(size.gzip).padStart(9)} gzip (budget 250 KB)`);

let themeTimes = null;
const times = await withServer(chatLoadTimes);
if (times === null) {
  console.log("Chat load: skipped (set MOBIUS_URL + MOBIUS_TOKEN, or MOBIUS_BIN)");
} else {
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(`Chat load, ${MESSAGES} messages, navigation → interactive (ms): ${times.map((t) => t.toFixed(0)).join(", ")}`);
  console.log(`  median ${median.toFixed(0)} ms over ${RUNS} runs`);
}
if (themeTimes !== null) {
  const sorted = [...themeTimes].sort((a, b) => a - b);
  console.log(`Theme change → restyled page (ms): ${themeTimes.map((t) => t.toFixed(0)).join(", ")}`);
  console.log(`  median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms over ${RUNS} changes (target ≤ 300 ms)`);
}
if (size.gzip > 250 * 1024) {
  console.error("initial route is over the 250 KB gzip budget");
  process.exitCode = 1;
}
