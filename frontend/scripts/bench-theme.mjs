// Theme benchmark: from `POST /api/theme/apply` (the agent's `mobius theme apply`) to the open
// shell and an open app frame restyled, in headless Chromium at phone size. Each round writes a
// new accent into DATA_DIR/theme/theme.css, applies it and waits until both documents paint it:
// `styled` is when the document's computed `--accent` holds the new colour (a MutationObserver
// sees the theme's <style> change and reads the style at once), `painted` the frame after that.
// Times are taken against the epoch on both sides (node and the page share the machine's clock).
// Prints JSON: {shell: {styled, painted}, frame: {styled, painted}} with p50/p99 in ms.
//
//   MOBIUS_URL=… MOBIUS_TOKEN=<owner token> BENCH_APP_ID=<id> BENCH_DATA_DIR=<data dir> node scripts/bench-theme.mjs
//
// The app must be one that paints `var(--accent)` (scripts/bench.py applies it). Chromium is
// Debian's /usr/bin/chromium driven by playwright-core from tests/e2e.

import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

/* global window, document, getComputedStyle, MutationObserver, requestAnimationFrame -- used inside evaluate */

const HERE = dirname(fileURLToPath(import.meta.url));
const E2E = resolve(HERE, "..", "..", "tests", "e2e");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);

const origin = (process.env.MOBIUS_URL ?? "").replace(/\/$/, "");
const token = process.env.MOBIUS_TOKEN;
const appId = process.env.BENCH_APP_ID;
const dataDir = process.env.BENCH_DATA_DIR;
if (!origin || !token || !appId || !dataDir) throw new Error("set MOBIUS_URL, MOBIUS_TOKEN, BENCH_APP_ID and BENCH_DATA_DIR");

const core = join(E2E, "node_modules", "playwright-core", "index.mjs");
if (!existsSync(core)) throw new Error("playwright-core is missing: run `npm ci` in tests/e2e");
const { chromium } = await import(pathToFileURL(core).href);

const now = () => performance.timeOrigin + performance.now();
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const summary = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
};

/** Watches the document for `--accent` becoming `colour`; resolves with {styled, painted} (epoch ms). */
function watch(colour) {
  const read = () => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim();
  const at = () => performance.timeOrigin + performance.now();
  window.__themeSeen = new Promise((done) => {
    const check = () => {
      if (read() !== colour) return false;
      const styled = at();
      observer.disconnect();
      requestAnimationFrame(() => done({ styled, painted: at() }));
      return true;
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    check();
  });
}

async function api(path, init = {}) {
  const res = await fetch(origin + path, { ...init, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" } });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  await context.addInitScript((t) => localStorage.setItem("mobius.token", t), token);
  const page = await context.newPage();
  await page.goto(`${origin}/chat/${randomUUID()}?app=${appId}`);
  let frame = null;
  for (let i = 0; i < 300 && !frame; i++) {
    frame = page.frames().find((f) => f.url().includes(`/api/apps/${appId}/frame`)) ?? null;
    if (!frame) await page.waitForTimeout(100);
  }
  if (!frame) throw new Error(`the app frame never appeared (page at ${page.url()})`);
  await frame.waitForFunction(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim() !== "", null, { timeout: 30_000 });

  const out = { shell: { styled: [], painted: [] }, frame: { styled: [], painted: [] } };
  for (let round = 0; round < ROUNDS + 3; round++) {
    // A colour no earlier round used, so the watchers cannot match a stale style.
    const colour = `#${(0x102030 + round * 0x010203).toString(16).padStart(6, "0")}`;
    await mkdir(join(dataDir, "theme"), { recursive: true });
    await writeFile(join(dataDir, "theme", "theme.css"), `:root {\n  --light-accent: ${colour};\n  --dark-accent: ${colour};\n}\n`);
    await page.evaluate(watch, colour);
    await frame.evaluate(watch, colour);
    const t0 = now();
    await api("/api/theme/apply", { method: "POST", body: "{}" });
    const [shell, app] = await Promise.all([page.evaluate(() => window.__themeSeen), frame.evaluate(() => window.__themeSeen)]);
    if (round < 3) continue; // warm-up
    out.shell.styled.push(shell.styled - t0);
    out.shell.painted.push(shell.painted - t0);
    out.frame.styled.push(app.styled - t0);
    out.frame.painted.push(app.painted - t0);
  }
  const result = {};
  for (const [doc, times] of Object.entries(out)) result[doc] = { styled: summary(times.styled), painted: summary(times.painted) };
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}
