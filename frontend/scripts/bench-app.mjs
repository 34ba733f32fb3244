// App runtime benchmark: the useDocument update round trip in headless Chromium — frame →
// shell (storage host) → server (conditional write) → ack back in the frame — and, for reference,
// one durableWrite round trip and the same PUT sent by the shell page with a bare fetch (the
// floor the browser itself sets). Prints JSON with p50/p99 in ms.
//
//   MOBIUS_URL=http://127.0.0.1:8000 MOBIUS_TOKEN=<owner token> BENCH_APP_ID=<id> node scripts/bench-app.mjs
//
// The app must be the one scripts/bench.py applies (a useDocument counter exposing
// `window.__bench.update()`). Chromium is Debian's /usr/bin/chromium driven by playwright-core
// from tests/e2e (run `npm ci` there first).

import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/* global window -- used inside evaluate, which runs in the browser */

const HERE = dirname(fileURLToPath(import.meta.url));
const E2E = resolve(HERE, "..", "..", "tests", "e2e");
const WARMUP = 30;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);

const origin = (process.env.MOBIUS_URL ?? "").replace(/\/$/, "");
const token = process.env.MOBIUS_TOKEN;
const appId = process.env.BENCH_APP_ID;
if (!origin || !token || !appId) throw new Error("set MOBIUS_URL, MOBIUS_TOKEN and BENCH_APP_ID");

const core = join(E2E, "node_modules", "playwright-core", "index.mjs");
if (!existsSync(core)) throw new Error("playwright-core is missing: run `npm ci` in tests/e2e");
const { chromium } = await import(pathToFileURL(core).href);

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  await context.addInitScript((t) => localStorage.setItem("mobius.token", t), token);
  const page = await context.newPage();
  // A chat route keeps `?app=` (a cold start on "/" goes to a new chat without it).
  await page.goto(`${origin}/chat/${randomUUID()}?app=${appId}`);
  let frame = null;
  for (let i = 0; i < 300 && !frame; i++) {
    frame = page.frames().find((f) => f.url().includes(`/api/apps/${appId}/frame`)) ?? null;
    if (!frame) await page.waitForTimeout(100);
  }
  if (!frame) {
    await page.screenshot({ path: join(E2E, "..", "artifacts", "bench-app-failure.png") }).catch(() => undefined);
    throw new Error(`the app frame never appeared (page at ${page.url()})`);
  }
  await frame.waitForFunction(() => window.__bench?.ready() === true, null, { timeout: 30_000 });
  const result = await frame.evaluate(
    async ({ warmup, rounds }) => {
      const time = async (fn) => {
        const t0 = performance.now();
        await fn();
        return performance.now() - t0;
      };
      // A repeated run (the load gate may ask for one) starts from the count the last one left.
      const start = window.__bench.value()?.n ?? 0;
      for (let i = 0; i < warmup; i++) await window.__bench.update();
      const update = [];
      for (let i = 0; i < rounds; i++) update.push(await time(() => window.__bench.update()));
      const write = [];
      for (let i = 0; i < rounds; i++) write.push(await time(() => window.mobius.durableWrite("bench/plain.json", { i })));
      return { update, write, start, final: window.__bench.value() };
    },
    { warmup: WARMUP, rounds: ROUNDS },
  );
  // The floor: the same PUT sent by the shell page itself with fetch (no frame, no outbox).
  result.fetch = await page.evaluate(
    async ({ id, rounds }) => {
      const token = JSON.parse(localStorage.getItem("mobius.app-tokens"))[id].token;
      const out = [];
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now();
        await fetch(`/api/storage/apps/${id}/bench/raw.json`, {
          method: "PUT",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ i }),
        });
        out.push(performance.now() - t0);
      }
      return out;
    },
    { id: appId, rounds: ROUNDS },
  );
  const expected = result.start + WARMUP + ROUNDS;
  if (result.final?.n !== expected) throw new Error(`the counter ended at ${JSON.stringify(result.final)}, not ${expected}: an update was lost or applied twice`);
  const summary = {};
  for (const key of ["update", "write", "fetch"]) {
    const sorted = [...result[key]].sort((a, b) => a - b);
    summary[key] = { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), n: sorted.length };
  }
  console.log(JSON.stringify(summary));
} finally {
  await browser.close();
}
