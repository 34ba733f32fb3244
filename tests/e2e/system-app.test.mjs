// A system app on a phone against the real server and a real Claude Code turn (scripted model):
// an installed app with `system_app: true` and a `system_prompt` adds its prompt to chats started
// while it is installed — the model's request carries it, the chat's "What the agent was given"
// shows it — and its skill is listed in Settings; once the app is removed, a new chat's prompt
// no longer has it.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR (as for journey.test.mjs); the Claude CLI from
// MOBIUS_CLAUDE_BIN or MOBIUS_CLI_DIR (scripts/test installs it); frontend/node_modules (apps
// compile with it).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  PHONE,
  agentEnv,
  apiClient,
  appBuildEnv,
  claudeBin,
  eventually,
  openBrowser,
  screenshot,
  send,
  setupOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  turnEnds,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;
const TOKEN_KEY = "mobius.token";
const MARKER = "Always call the owner Captain Nemo.";
const SCRIPT = { side_text: "Captain", system_markers: [MARKER], steps: [{ text: "Aye, Captain Nemo." }] };

if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);
for (const [name, dir] of Object.entries(appBuildEnv())) {
  if (!existsSync(dir)) throw new Error(`${name}=${dir} does not exist: run npm ci in frontend/`);
}

let mock;
let server;
let phone;
let token;
let appId;
let problems = [];

const step = stepper({ prefix: "system-app", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

/** Opens `chat` in the PWA, signed in. */
async function openChat(page, chat) {
  await page.goto(`${server.origin}/chat/${chat}`);
  await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
  await page.reload();
  await page.getByRole("textbox", { name: "Message" }).waitFor();
}

describe("a system app's prompt on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer({ ...agentEnv(mock.url), ...appBuildEnv() });
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "system-app-server.log", browsers: [phone], mocks: [mock] }));

  step("the owner has Claude connected and a system app installed", async () => {
    token = await setupOwner(server.origin);
    assert.equal((await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } })).status, 200);
    const dir = join(server.dataDir, "apps", "captain");
    await mkdir(dir, { recursive: true });
    const manifest = {
      id: "captain",
      name: "Captain",
      version: "1.0.0",
      description: "Sets the tone.",
      entry: "index.jsx",
      system_app: true,
      system_prompt: "prompt.md",
      skills: ["logbook.md"],
      source_files: ["prompt.md", "logbook.md"],
    };
    await writeFile(join(dir, "mobius.json"), JSON.stringify(manifest));
    await writeFile(join(dir, "index.jsx"), "export default function App() { return <p>Aye</p>; }\n");
    await writeFile(join(dir, "prompt.md"), `${MARKER}\n`);
    await writeFile(join(dir, "logbook.md"), "---\ndescription: Keep the ship's logbook in the Captain app\n---\n");
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "captain" } });
    assert.equal(applied.status, 200, JSON.stringify(applied.json));
    appId = applied.json.app.id;
  });

  step("a new chat's first turn gives the model the system app's prompt", async (page) => {
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "deck", title: "Deck" } })).status, 201);
    await openChat(page, "deck");
    await send(page, "Hello");
    await turnEnds(page);
    await page.getByText("Aye, Captain Nemo.").waitFor();
    const main = (await mock.requests()).filter((r) => r.kind === "main");
    assert.ok(main.length > 0, "no model request");
    assert.ok(main.every((r) => r.system_markers.includes(MARKER)), `a request lacked the app's prompt: ${JSON.stringify(main.map((r) => r.system_markers))}`);
  });

  step("the chat's info sheet shows the prompt the agent was given, with the app's part", async (page) => {
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    await sheet.getByRole("button", { name: "What the agent was given" }).click();
    const given = sheet.getByRole("region", { name: "What the agent was given" });
    await given.getByText(/Always call the owner Captain Nemo\./).first().waitFor();
    await screenshot(page, "system-app-context-phone.png");
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
  });

  step("the app's skill is in the skills index", async () => {
    const skills = (await api("/api/skills")).json.skills;
    const logbook = skills.find((s) => s.origin === "app");
    assert.equal(logbook?.name, "logbook", JSON.stringify(skills));
  });

  step("once the app is removed, a new chat's prompt no longer has it; the first chat keeps its snapshot", async () => {
    assert.ok((await api(`/api/apps/${appId}`, { method: "DELETE" })).status < 300);
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "bridge", title: "Bridge" } })).status, 201);
    const fresh = (await api("/api/chats/bridge/context")).json;
    assert.doesNotMatch(fresh.system_prompt.text, /Captain Nemo/);
    assert.ok(!(await api("/api/skills")).json.skills.some((s) => s.origin === "app"), "the app's skill left with it");
    await eventually("the first chat's pinned prompt keeps the app's part", async () => {
      const pinned = (await api("/api/chats/deck/context")).json;
      return pinned.pinned === true && pinned.system_prompt.text.includes(MARKER);
    });
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});
