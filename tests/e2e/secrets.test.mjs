// Secure input end to end on a phone, with the real server and a real Claude Code turn (scripted
// model): the agent runs `mobius secret request`, a card appears in the chat, the owner types the
// secret into it, the turn goes on with only "stored" and the name, and the secret is in no
// model request, no process's arguments or environment, and no file the agent can read. Then
// Apps › the app › Secrets shows the name (never the value), replaces and deletes it.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR (as for journey.test.mjs); the Claude CLI from
// MOBIUS_CLAUDE_BIN or MOBIUS_CLI_DIR (scripts/test installs it).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  PHONE,
  agentEnv,
  apiClient,
  claudeBin,
  eventually,
  openBrowser,
  screenshot,
  setupOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const TOKEN_KEY = "mobius.token";
const CHAT = "keys";
/** What the owner types: it must reach the app's secret and nothing else. */
const SECRET = "wx-live-51c0ffee9d2b7a";

const MANIFEST = { id: "weather", name: "Weather", version: "1.0.0", description: "Tomorrow's forecast.", entry: "index.jsx" };
const JSX = `export default function Weather() {
  return <main style={{ padding: 16 }}><h1>Weather</h1></main>;
}
`;

const SCRIPT = {
  side_text: "Weather key",
  steps: [
    {
      text: "I need your weather API key for the forecast job.",
      tool_use: {
        name: "Bash",
        input: {
          command: 'mobius secret request WEATHER_KEY --app weather --reason "The forecast job calls the weather API with it."',
          description: "Ask the owner for the key",
          timeout: 600000,
        },
      },
    },
    { text: "Thanks — the key is saved as WEATHER_KEY for Weather." },
  ],
  default: { text: "Nothing more to do." },
};

let mock;
let server;
let phone;
let token;
let appId;
let problems = [];

const step = stepper({ prefix: "secrets", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

/** Files under `dir` whose bytes contain `needle`. */
async function filesContaining(dir, needle) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath ?? entry.path, entry.name);
    const bytes = await readFile(path).catch(() => null);
    if (bytes?.includes(needle)) found.push(path);
  }
  return found;
}

/** Processes (of this user, readable) whose command line or environment contain `needle`. */
async function processesHolding(needle) {
  const found = [];
  for (const pid of (await readdir("/proc")).filter((p) => /^\d+$/.test(p))) {
    for (const part of ["cmdline", "environ"]) {
      const bytes = await readFile(`/proc/${pid}/${part}`).catch(() => null);
      if (bytes?.includes(needle)) found.push(`${pid}/${part}`);
    }
  }
  return found;
}

describe("secure input (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "secrets-server.log", browsers: [phone], mocks: [mock] }));

  step("the owner has Claude connected, an app and a chat open", async (page) => {
    token = await setupOwner(server.origin);
    assert.equal((await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } })).status, 200);
    const dir = join(server.dataDir, "apps", "weather");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "mobius.json"), JSON.stringify(MANIFEST, null, 2));
    await writeFile(join(dir, "index.jsx"), JSX);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "weather" } });
    assert.equal(applied.status, 200, `apply weather: ${applied.text}`);
    appId = applied.json.app.id;
    assert.equal((await api("/api/chats", { method: "POST", body: { id: CHAT, title: "Weather key" } })).status, 201);
    await page.goto(`${server.origin}/chat/${CHAT}`);
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.reload();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
  });

  step("the agent asks for the key: a card in the chat names it and the app", async (page) => {
    await page.getByRole("textbox", { name: "Message" }).fill("Set up the forecast job");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const card = page.getByRole("form", { name: "Secret request" });
    await card.waitFor({ timeout: 90_000 });
    await card.getByText("WEATHER_KEY").waitFor();
    await card.getByText("The forecast job calls the weather API with it.").waitFor();
    const field = card.getByLabel(/Value/);
    assert.equal(await field.getAttribute("type"), "password", "the value is masked as it is typed");
    await screenshot(page, "secrets-card-phone.png");
  });

  step("the owner types the secret; the card says saved and the turn goes on", async (page) => {
    const card = page.getByRole("form", { name: "Secret request" });
    await card.getByLabel(/Value/).fill(SECRET);
    await card.getByRole("button", { name: "Save secret" }).click();
    const saved = page.getByRole("region", { name: "Secret request" });
    await saved.getByText("Saved").waitFor();
    assert.deepEqual(await processesHolding(SECRET), [], "no process holds the secret in its arguments or environment");
    await page.locator(".row-assistant").last().getByText("the key is saved as WEATHER_KEY").waitFor({ timeout: 90_000 });
    assert.equal(await page.getByText(SECRET).count(), 0, "the value is nowhere on the page");
    await screenshot(page, "secrets-saved-phone.png");
  });

  step("the model and the agent never saw the value; the app has it, sealed", async () => {
    const requests = await mock.requests();
    assert.ok(requests.length > 0);
    const dump = JSON.stringify(requests);
    assert.ok(!dump.includes(SECRET), "a model request carried the secret");
    assert.match(dump, /stored: the owner entered WEATHER_KEY/, "the turn heard that it was stored");
    assert.deepEqual(await filesContaining(server.dataDir, SECRET), [], "no file in DATA_DIR holds the secret in the clear");
    const value = await fetch(`${server.origin}/api/apps/${appId}/secrets/WEATHER_KEY`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(await value.text(), SECRET, "stored as the app's secret");
    await eventually("the turn ended", async () => !(await api(`/api/chats/${CHAT}`)).json.running);
    const detail = JSON.stringify((await api(`/api/chats/${CHAT}`)).json);
    assert.ok(detail.includes('"secret":"stored"') && !detail.includes(SECRET), "the transcript keeps only the outcome");
  });

  step("Apps › Weather shows the secret's name, replaces and deletes it", async (page) => {
    await page.goto(`${server.origin}/apps`);
    await page.getByRole("list", { name: "Installed apps" }).getByRole("button", { name: /Weather/ }).first().click();
    const secrets = page.getByRole("group", { name: "Secrets" });
    await secrets.getByText("WEATHER_KEY").waitFor();
    assert.equal(await page.getByText(SECRET).count(), 0, "the value is never shown");
    await screenshot(page, "secrets-settings-phone.png");
    await secrets.getByRole("button", { name: "Replace" }).click();
    await secrets.getByLabel("New value for WEATHER_KEY").fill("wx-rotated");
    await secrets.getByRole("button", { name: "Save" }).click();
    await secrets.getByRole("button", { name: "Replace" }).waitFor();
    const value = await fetch(`${server.origin}/api/apps/${appId}/secrets/WEATHER_KEY`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(await value.text(), "wx-rotated");
    await secrets.getByRole("button", { name: "Delete" }).click();
    await secrets.getByRole("alertdialog", { name: "Delete WEATHER_KEY" }).getByRole("button", { name: "Delete" }).click();
    await secrets.waitFor({ state: "detached" });
    assert.deepEqual((await api(`/api/apps/${appId}/secrets`)).json.secrets, []);
    assert.deepEqual(problems, [], "no console errors or failed requests");
  });
});
