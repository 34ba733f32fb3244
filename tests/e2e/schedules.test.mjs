// Schedules in the PWA against the real server, at phone size: an app whose manifest has a
// schedule shows its job in its details and in Settings › Schedules with its next run; the owner
// runs it now, reads the run's output, pauses and resumes it; and schedules a prompt into a chat
// from the chat's info sheet.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR, as for journey.test.mjs.

import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  accessibilityProblems,
  apiClient,
  appBuildEnv,
  assertFitsAndLegible,
  eventually,
  openBrowser,
  PHONE,
  screenshot,
  setupOwner,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;
const TOKEN_KEY = "mobius.token";

let server;
let phone;
let token;
let appId;
let problems = [];

const step = stepper({ prefix: "schedules", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

const MANIFEST = {
  id: "brief",
  name: "Morning Brief",
  version: "1.0.0",
  description: "Writes a brief every weekday morning.",
  entry: "index.jsx",
  schedule: { default: "30 7 * * 1-5", job: "job.sh", user_configurable: true },
};


async function openSettings(page) {
  await page.getByRole("button", { name: "Open chats" }).click();
  await page.getByRole("dialog", { name: "Chats" }).getByRole("button", { name: "Settings" }).click();
  await page.getByRole("navigation", { name: "Settings sections" }).getByRole("button", { name: /^Schedules/ }).click();
  await page.getByRole("region", { name: "Schedules" }).waitFor();
}

before(async () => {
  server = await startTestServer(appBuildEnv());
  phone = await openBrowser(PHONE);
  problems = watchProblems(phone.page);
});

after(() => tearDown({ server, log: "server-schedules.log", browsers: [phone] }));

describe("schedules (390×844)", () => {
  step("an app with a scheduled job is applied", async (page) => {
    token = await setupOwner(server.origin);
    const dir = join(server.dataDir, "apps", "brief");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "mobius.json"), JSON.stringify(MANIFEST));
    await writeFile(join(dir, "index.jsx"), "export default function App() { return <p>Brief</p>; }\n");
    await writeFile(join(dir, "job.sh"), 'echo "brief for app $1"\necho "written at $(date +%H:%M)"\n');
    await chmod(join(dir, "job.sh"), 0o755);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "brief" } });
    assert.equal(applied.status, 200, applied.text);
    appId = applied.json.app.id;
    const chat = await api("/api/chats", { method: "POST", body: { id: "garden", title: "Garden plans" } });
    assert.equal(chat.status, 201);
    await page.goto(server.origin + "/");
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.reload();
    await page.getByRole("button", { name: "Open chats" }).waitFor();
  });

  step("Settings › Schedules lists the job with its cadence and next run", async (page) => {
    await openSettings(page);
    const section = page.getByRole("region", { name: "Schedules" });
    const row = section.getByRole("button", { name: /Morning Brief.*Weekdays at 07:30/ });
    await row.waitFor();
    await eventually("planning the next run", async () => !(await row.textContent()).includes("Planning"), { timeoutMs: 20_000 });
    assert.match(await row.textContent(), /Next: \w{3}/);
    await row.scrollIntoViewIfNeeded();
    await screenshot(page, "schedules-list-phone.png");
    await assertFitsAndLegible(page, "Settings › Schedules");
    const wide = await page.evaluate(() =>
      [...document.querySelectorAll("#s-schedules ~ *, .settings, .settings-inner")]
        .filter((el) => el.scrollWidth > el.clientWidth + 1)
        .map((el) => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`),
    );
    assert.deepEqual(wide, [], "nothing in Settings › Schedules scrolls sideways");
  });

  step("the owner runs the job now and reads its output", async (page) => {
    await page.getByRole("region", { name: "Schedules" }).getByRole("button", { name: /Morning Brief/ }).click();
    const sheet = page.getByRole("dialog", { name: "Morning Brief" });
    await sheet.getByRole("button", { name: "Run now" }).click();
    const run = sheet.getByRole("button", { name: /Succeeded · run by hand/ });
    await run.waitFor({ timeout: 30_000 });
    await run.click();
    const output = sheet.getByLabel("Output");
    await output.waitFor();
    assert.match(await output.textContent(), new RegExp(`brief for app ${appId}`));
    await screenshot(page, "schedules-run-output-phone.png");
    assert.deepEqual(await accessibilityProblems(page), []);
  });

  step("pausing and resuming, and editing the cadence the app allows", async (page) => {
    const sheet = page.getByRole("dialog", { name: "Morning Brief" });
    await sheet.getByRole("button", { name: "Pause" }).click();
    await sheet.getByRole("button", { name: "Resume" }).waitFor();
    const paused = (await api("/api/schedules")).json.schedules.find((s) => s.app_id === appId);
    assert.ok(paused.paused_at, "paused on the server");
    await sheet.getByRole("button", { name: "Resume" }).click();
    await sheet.getByRole("button", { name: "Pause" }).waitFor();
    const cadence = sheet.getByLabel("Cadence (cron)");
    await cadence.fill("0 25 * * *");
    await sheet.getByRole("button", { name: "Save" }).click();
    await sheet.getByRole("alert").filter({ hasText: /field 2 \(hour\)/ }).waitFor();
    await cadence.fill("15 6 * * *");
    await sheet.getByRole("button", { name: "Save" }).click();
    await eventually("the new cadence", async () => (await api("/api/schedules")).json.schedules.find((s) => s.app_id === appId).cron === "15 6 * * *", { timeoutMs: 20_000 });
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
    await page.getByRole("region", { name: "Schedules" }).getByRole("button", { name: /Morning Brief.*Every day at 06:15/ }).waitFor();
  });

  step("the app's details show its job", async (page) => {
    await page.goto(server.origin + "/apps");
    await page.getByRole("button", { name: /Morning Brief/ }).first().click();
    const jobs = page.getByRole("group", { name: "Jobs" });
    await jobs.waitFor();
    assert.match(await jobs.textContent(), /Every day at 06:15/);
    assert.match(await jobs.textContent(), /last: Succeeded/);
    await screenshot(page, "schedules-app-jobs-phone.png");
  });

  step("the owner schedules a prompt into a chat from its info sheet", async (page) => {
    await page.goto(server.origin + "/chat/garden");
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    await sheet.getByRole("button", { name: "Schedule a prompt here" }).click();
    const form = sheet.getByRole("form", { name: "New scheduled prompt" });
    await form.getByLabel("Prompt").fill("What should I water today?");
    await form.getByLabel("When").selectOption("week");
    await form.getByLabel("Day").selectOption("6");
    await form.getByLabel("Time").fill("08:00");
    await assertFitsAndLegible(page, "the schedule form");
    await screenshot(page, "schedules-chat-form-phone.png");
    await form.getByRole("button", { name: "Schedule" }).click();
    await sheet.getByText(/Saturdays at 08:00/).waitFor();
    const made = (await api("/api/schedules")).json.schedules.find((s) => s.chat_id === "garden");
    assert.equal(made.cron, "0 8 * * 6");
    assert.equal(made.prompt, "What should I water today?");
    assert.equal(made.kind, "agent_turn");
    assert.deepEqual(problems, []);
  });
});
