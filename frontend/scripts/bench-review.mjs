// Review benchmark (scripts/bench, "review" section; issue 37): what reviewing a long turn costs
// on a phone. Headless Chromium at phone size (390×844, 2× pixels, touch) with its CPU slowed 4×
// (CDP `Emulation.setCPUThrottlingRate`), each run a cold load in a fresh profile with the
// service worker off, on chats scripts/bench.py seeded through `POST /api/chats`:
//
// - the review chat: a settled turn of 500 tool calls, one of 2,000 calls with an Edit of a
//   2,000-line file, and a plain turn without edits (replies at transcript indexes 1, 3 and 5);
// - a chat of plain turns, opened from a one-message chat in the page (no reload), for the
//   render cost of turns without edits, against a baseline PWA when MOBIUS_BASELINE_URL names a
//   server that serves one (the same chats seeded there).
//
// A tap is timed from just before the click to the frame that shows its result painted: the
// click renders synchronously (React flushes a discrete event at once), then a task posted from
// that frame's requestAnimationFrame runs after the frame's style, layout and paint. An opened
// stretch is whole once its steps list is no longer `aria-busy`: every step in the page, or (past
// 200 steps, windowed) those near the screen, the rest following the scroll. Scrolling is
// driven from requestAnimationFrame at a fixed speed over a fixed distance of the opened
// 2,000-step stretch (the page must draw every frame itself: a conservative measure of what a
// finger's fling shows), counting frames.
//
//   MOBIUS_URL=… MOBIUS_TOKEN=… MOBIUS_REVIEW_CHAT=<id> MOBIUS_PLAIN_CHAT=<id> MOBIUS_START_CHAT=<id> \
//     [MOBIUS_BASELINE_URL=… MOBIUS_BASELINE_TOKEN=…] [MOBIUS_BENCH_RUNS=3] node scripts/bench-review.mjs
//
// Prints one JSON object: every figure as a list of runs (ms, or frames per second).

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/* global document, requestAnimationFrame, MutationObserver, WheelEvent, PointerEvent, PopStateEvent, history, window -- used inside page.evaluate, which runs in the browser */

const HERE = dirname(fileURLToPath(import.meta.url));
const E2E = resolve(HERE, "..", "..", "tests", "e2e");
const CPU_SLOWDOWN = 4;
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
/** A brisk fling on a phone, held for a fixed time: 15,000 px of the 2,000-step stretch. */
const SCROLL_PX_PER_S = 3000;
const SCROLL_SECONDS = 5;
const LOAD_TIMEOUT_MS = 60_000;
/** Turns in the plain chat (one page of the transcript: its last reply is message 19). */
const PLAIN_TURNS = 10;

const env = (name) => {
  const value = process.env[name] ?? "";
  if (!value) {
    console.error(`set ${name}`);
    process.exit(2);
  }
  return value;
};
const origin = env("MOBIUS_URL").replace(/\/$/, "");
const token = env("MOBIUS_TOKEN");
const reviewChat = env("MOBIUS_REVIEW_CHAT");
const plainChat = env("MOBIUS_PLAIN_CHAT");
const startChat = env("MOBIUS_START_CHAT");
const baseline = process.env.MOBIUS_BASELINE_URL ? { origin: process.env.MOBIUS_BASELINE_URL.replace(/\/$/, ""), token: env("MOBIUS_BASELINE_TOKEN") } : null;
const runs = Math.max(1, Number(process.env.MOBIUS_BENCH_RUNS ?? "3") || 3);

const core = join(E2E, "node_modules", "playwright-core", "index.mjs");
if (!existsSync(core)) throw new Error("playwright-core is missing: run `npm ci` in tests/e2e");
const { chromium } = await import(pathToFileURL(core).href);

/** A fresh phone profile on `site`, signed in, its CPU slowed. */
async function phonePage(browser, site) {
  const context = await browser.newContext({ ...PHONE, serviceWorkers: "block" });
  await context.addInitScript((t) => localStorage.setItem("mobius.token", t), site.token);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: CPU_SLOWDOWN });
  await cdp.send("Performance.enable");
  return { context, page, cdp };
}

/** Main-thread busy time so far (ms), as Chromium counts it. */
async function mainThreadMs(cdp) {
  const { metrics } = await cdp.send("Performance.getMetrics");
  return (metrics.find((m) => m.name === "TaskDuration")?.value ?? 0) * 1000;
}

/**
 * Taps the element `selector` (the first match whose text includes `text`, if given) and resolves
 * with the ms until the frame after it painted (`painted`), and for each of `until` (name →
 * {selector, count}) until that many matches were painted. A pointerdown goes first, as from a
 * finger: the chat holds its scroll for the reader then.
 */
function tap(page, selector, { text = null, until = {} } = {}) {
  return page.evaluate(
    ({ selector, text, until }) =>
      new Promise((done, fail) => {
        const el = [...document.querySelectorAll(selector)].find((e) => text === null || (e.textContent ?? "").includes(text));
        if (!el) return fail(new Error(`nothing to tap at ${selector}`));
        const painted = (then) =>
          requestAnimationFrame(() => {
            const channel = new MessageChannel();
            channel.port1.onmessage = () => then(performance.now());
            channel.port2.postMessage(0);
          });
        const times = {};
        const waiting = new Set(Object.keys(until));
        const timer = setTimeout(() => fail(new Error(`never showed: ${[...waiting].join(", ")}`)), 60_000);
        let observer = null;
        const finish = () => {
          if (waiting.size > 0 || !("painted" in times) || Object.keys(times).length < Object.keys(until).length + 1) return;
          clearTimeout(timer);
          observer?.disconnect();
          done(times);
        };
        const check = () => {
          for (const name of [...waiting]) {
            const want = until[name];
            if (document.querySelectorAll(want.selector).length < want.count) continue;
            waiting.delete(name);
            painted((at) => {
              times[name] = at - started;
              finish();
            });
          }
        };
        const started = performance.now();
        el.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true, pointerType: "touch" }));
        el.click();
        // Conditions are checked from the first frame on: React renders a click's update in a
        // microtask, so the page before the tap could otherwise pass for the page after it.
        painted((at) => {
          times.painted = at - started;
          check();
          if (waiting.size > 0) {
            observer = new MutationObserver(check);
            observer.observe(document.body, { subtree: true, childList: true, attributes: true });
          }
          finish();
        });
      }),
    { selector, text, until },
  );
}

/** Frames drawn while the chat scrolls down `seconds` at `speed` px/s from the top of `selector`. */
function scrollFrames(page, selector, speed, seconds) {
  return page.evaluate(
    ({ selector, speed, seconds }) =>
      new Promise((done, fail) => {
        const box = document.querySelector(".chat-scroll");
        const target = document.querySelector(selector);
        if (!box || !target) return fail(new Error(`nothing to scroll at ${selector}`));
        const from = box.scrollTop + target.getBoundingClientRect().top - box.getBoundingClientRect().top;
        const room = box.scrollHeight - box.clientHeight - from;
        if (room < speed * seconds) return fail(new Error(`only ${Math.round(room)} px to scroll`));
        box.scrollTop = from;
        const gaps = [];
        let first = null;
        let last = null;
        const frame = (now) => {
          if (first === null) first = now;
          else gaps.push(now - last);
          last = now;
          const t = (now - first) / 1000;
          if (t >= seconds) {
            const sorted = [...gaps].sort((a, b) => a - b);
            return done({
              fps: gaps.length / t,
              longest: sorted[sorted.length - 1] ?? 0,
              // A gap past 1.5 frames of 60 Hz showed at least one frame late.
              late: gaps.filter((g) => g > 25).length,
              frames: gaps.length,
            });
          }
          // As a finger's scroll would: the chat leaves the reader's scroll alone.
          box.dispatchEvent(new WheelEvent("wheel", { deltaY: 1, bubbles: true }));
          box.scrollTop = from + speed * t;
          requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      }),
    { selector, speed, seconds },
  );
}

/** Frames per second of an idle page here: the most the scroll figure can show. */
function idleFps(page) {
  return page.evaluate(
    () =>
      new Promise((done) => {
        let frames = -1;
        let first = 0;
        const frame = (now) => {
          if (frames < 0) first = now;
          frames += 1;
          if (now - first >= 1000) return done((frames * 1000) / (now - first));
          requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      }),
  );
}

const reply = (idx) => `.row-assistant[data-idx="${idx}"]`;

/** One cold run over the review chat: open, the 500-step stretch, the diff, the 2,000 steps. */
async function reviewRun(browser, out) {
  const { context, page } = await phonePage(browser, { token });
  try {
    await page.goto(`${origin}/chat/${reviewChat}`, { waitUntil: "commit" });
    await page.locator(`${reply(5)} .md:not(.md-plain)`).first().waitFor({ timeout: LOAD_TIMEOUT_MS });
    const opened = await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => done(performance.now()))));
    out.chatOpen.push(opened);

    const group500 = `${reply(1)} .activity-group-head`;
    const steps500 = await tap(page, group500, { until: { all: { selector: `${reply(1)} .activity-group-steps:not([aria-busy])`, count: 1 } } });
    out.open500.push(steps500.painted);
    out.all500.push(steps500.all);
    await tap(page, group500);

    const file = `${reply(3)} .files-changed-file`;
    const diff = `${reply(3)} .files-changed .diff`;
    const settled = { selector: `${diff}:not([aria-busy])`, count: 1 };
    const first = await tap(page, file, { text: "big.ts", until: { page: settled, coloured: { selector: `${diff} .diff-line .hljs-keyword`, count: 1 } } });
    out.diffFirst.push(first.painted);
    out.diffPage.push(first.page);
    out.diffColoured.push(first.coloured);
    let rest = 0;
    while (await page.locator(`${diff} .diff-more`).count()) rest += (await tap(page, `${diff} .diff-more`, { until: { page: settled } })).page;
    const all = await page.locator(`${diff} .diff-line`).count();
    if (all < 2000) throw new Error(`the whole diff showed ${all} rows`);
    out.diffRest.push(rest);
    await tap(page, file, { text: "big.ts" });

    const group2000 = `${reply(3)} .activity-group-head`;
    const steps2000 = await tap(page, group2000, { until: { all: { selector: `${reply(3)} .activity-group-steps:not([aria-busy])`, count: 1 } } });
    out.open2000.push(steps2000.painted);
    out.all2000.push(steps2000.all);
    const scroll = await scrollFrames(page, `${reply(3)} .activity-group-steps`, SCROLL_PX_PER_S, SCROLL_SECONDS);
    out.scrollFps.push(scroll.fps);
    out.scrollLate.push(scroll.late);
    out.scrollLongest.push(scroll.longest);
    out.idleFps.push(await idleFps(page));
  } finally {
    await context.close();
  }
}

/** One cold run: the one-message chat loaded, then the chat of plain turns opened in the page. */
async function plainRun(browser, site) {
  const { context, page, cdp } = await phonePage(browser, site);
  try {
    await page.goto(`${site.origin}/chat/${startChat}`, { waitUntil: "commit" });
    await page.locator(".row-assistant .md:not(.md-plain)").first().waitFor({ timeout: LOAD_TIMEOUT_MS });
    await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
    const before = await mainThreadMs(cdp);
    const ms = await page.evaluate(
      ({ url, last }) =>
        new Promise((done, fail) => {
          const started = performance.now();
          const timer = setTimeout(() => fail(new Error("the plain chat never showed its last reply")), 60_000);
          // In-app navigation, as the notification bell does it.
          history.pushState(null, "", url);
          window.dispatchEvent(new PopStateEvent("popstate"));
          const observer = new MutationObserver(() => {
            if (!document.querySelector(last)) return;
            observer.disconnect();
            requestAnimationFrame(() => {
              const channel = new MessageChannel();
              channel.port1.onmessage = () => {
                clearTimeout(timer);
                done(performance.now() - started);
              };
              channel.port2.postMessage(0);
            });
          });
          observer.observe(document.body, { subtree: true, childList: true });
        }),
      { url: `/chat/${plainChat}`, last: `${reply(PLAIN_TURNS * 2 - 1)} .md:not(.md-plain)` },
    );
    const main = (await mainThreadMs(cdp)) - before;
    return { ms, main };
  } finally {
    await context.close();
  }
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
const out = {
  chatOpen: [],
  idleFps: [],
  open500: [],
  all500: [],
  diffFirst: [],
  diffPage: [],
  diffColoured: [],
  diffRest: [],
  open2000: [],
  all2000: [],
  scrollFps: [],
  scrollLate: [],
  scrollLongest: [],
  plain: [],
  plainMain: [],
  baselinePlain: [],
  baselinePlainMain: [],
};
try {
  for (let i = 0; i < runs; i++) await reviewRun(browser, out);
  // Interleaved with the baseline's, so a busy moment of the machine weighs on both alike.
  for (let i = 0; i < runs + 2; i++) {
    const now = await plainRun(browser, { origin, token });
    out.plain.push(now.ms);
    out.plainMain.push(now.main);
    if (baseline) {
      const then = await plainRun(browser, baseline);
      out.baselinePlain.push(then.ms);
      out.baselinePlainMain.push(then.main);
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
