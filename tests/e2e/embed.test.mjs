// An app written for the original platform embeds the agent chat (window.mobius.chat, written
// from the contract, not from any one app): the nested chat frame connects with its own
// session, a message typed in it runs a real Claude Code turn against the scripted model, the
// app hears message-sent and turn-done, the chat it persisted comes back after a reload, and
// chat.start creates an owner-visible chat and sends its first message without navigating.
//
// Environment: as apps.test.mjs (MOBIUS_BIN, MOBIUS_FRONTEND_DIR, the Claude CLI).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import {
  agentEnv,
  claudeBin,
  eventually,
  openBrowser,
  OWNER,
  PHONE,
  screenshot,
  setupOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 120_000;
const TURN_TIMEOUT = 90_000;
const REPLY = "A half is one of two equal parts.";

const TUTOR_MANIFEST = {
  id: "tutor",
  name: "Tutor",
  version: "1.0.0",
  description: "Lessons with an agent beside them.",
  entry: "index.jsx",
  embeds_agent: true,
};

const TUTOR_JSX = `import { useEffect, useRef, useState } from "react";

export default function Tutor() {
  const mount = useRef(null);
  const [events, setEvents] = useState([]);
  const [started, setStarted] = useState(null);
  const log = (text) => setEvents((list) => [...list, text]);

  useEffect(() => {
    let handle = null;
    let gone = false;
    window.mobius
      .chat({
        mount: mount.current,
        persist: "tutor/chat.json",
        title: "Tutor chat",
        systemPrompt: "You are a patient maths tutor.",
        picker: false,
        guidance: "Ask about fractions",
        getContext: () => ({ lesson: "Fractions", page: 3 }),
        onTurnDone: () => log("turn-done"),
        onMessageSent: () => log("message-sent"),
        onError: (detail) => log("error " + detail.error),
      })
      .then((h) => {
        if (gone) return h.destroy();
        handle = h;
        h.on("ready", (detail) => log("ready " + (detail.chatId === h.chatId ? "same-chat" : "other-chat")));
      })
      .catch((error) => log("failed " + error.message));
    return () => {
      gone = true;
      if (handle) handle.destroy();
    };
  }, []);

  async function start() {
    try {
      const result = await window.mobius.chat.start({ draft: "Start a lesson on fractions" });
      setStarted(result.chatId + " " + (result.response && result.response.status));
    } catch (error) {
      setStarted("failed " + error.message);
    }
  }

  return (
    <main style={{ display: "flex", flexDirection: "column", height: "100%", padding: 8, boxSizing: "border-box" }}>
      <h1 style={{ margin: 0 }}>Tutor</h1>
      <ul aria-label="Chat events">{events.map((e, i) => <li key={i}>{e}</li>)}</ul>
      <button onClick={start}>Start a lesson</button>
      {started ? <p>Started {started}</p> : null}
      <div ref={mount} style={{ flex: 1, minHeight: 360 }} />
    </main>
  );
}
`;

const SCRIPT = { steps: [{ text: REPLY }], default: { text: REPLY }, side_text: "Fractions" };

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

let mock;
let server;
let phone;
let ownerToken;
let tutorId;
let embeddedChat;
let problems = [];

async function api(path, { method = "GET", body } = {}) {
  const response = await fetch(server.origin + path, {
    method,
    headers: { Authorization: `Bearer ${ownerToken}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not JSON.
  }
  return { status: response.status, json, text };
}

/** What the embedded chat's turns may take on a loaded machine. */
const POLL_TIMEOUT_MS = 30_000;

const step = stepper({ prefix: "embed", timeout: STEP_TIMEOUT, page: () => phone.page });
const appFrame = (page) => page.frameLocator('iframe[title="Tutor"]');
const chatFrame = (page) => appFrame(page).frameLocator('iframe[title="Tutor chat"]');
const events = (page) => appFrame(page).getByRole("list", { name: "Chat events" });

describe("an app embeds the agent chat (real server, real Claude CLI, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    ownerToken = await setupOwner(server.origin);
    const saved = await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } });
    assert.equal(saved.status, 200, saved.text);
    const dir = join(server.dataDir, "apps", "tutor");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "mobius.json"), JSON.stringify(TUTOR_MANIFEST, null, 2));
    await writeFile(join(dir, "index.jsx"), TUTOR_JSX);
    const applied = await api("/api/apps/apply", { method: "POST", body: { slug: "tutor" } });
    assert.equal(applied.status, 200, applied.text);
    tutorId = applied.json.app.id;
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "embed-server.log", browsers: [phone], mocks: [mock] }));

  step("the app's nested chat connects with its own session", async (page) => {
    await page.goto(server.origin + "/");
    await page.getByRole("heading", { name: "Sign in to Möbius" }).waitFor();
    await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
    await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(/\/chat\//);
    await page.goto(`${server.origin}/?app=${tutorId}`);
    await appFrame(page).getByRole("heading", { name: "Tutor" }).waitFor({ timeout: 30_000 });
    await events(page).getByText("ready same-chat").waitFor({ timeout: 30_000 });
    await chatFrame(page).getByText("Ask about fractions").waitFor();
    embeddedChat = await eventually(
      "the persisted chat id",
      async () => {
        const stored = await api(`/api/storage/apps/${tutorId}/tutor/chat.json`);
        return stored.status === 200 && stored.json?.id;
      },
      { timeoutMs: POLL_TIMEOUT_MS },
    );
    // The app's chat stays out of the owner's drawer.
    const drawer = await api("/api/chats");
    assert.ok(!drawer.json.some((c) => c.id === embeddedChat), "the embedded chat is hidden from the drawer");
    await screenshot(page, "embed-ready-phone.png");
  });

  step("a message typed in the embedded chat runs a real Claude turn", async (page) => {
    const chat = chatFrame(page);
    await chat.getByRole("textbox", { name: "Message", exact: true }).fill("What is a half?");
    await chat.getByRole("button", { name: "Send", exact: true }).click();
    await chat.getByText(REPLY).waitFor({ timeout: TURN_TIMEOUT });
    await events(page).getByText("message-sent").waitFor();
    await events(page).getByText("turn-done").waitFor({ timeout: TURN_TIMEOUT });
    const detail = await api(`/api/chats/${embeddedChat}`);
    assert.equal(detail.status, 200);
    const texts = JSON.stringify(detail.json.messages);
    assert.ok(texts.includes("What is a half?") && texts.includes(REPLY), texts);
    // getContext: the app's state went to the agent with the message, not into its visible text.
    const sent = detail.json.messages.find((m) => m.role === "user");
    assert.equal(sent.content, "What is a half?");
    assert.match(sent.agent_context ?? "", /<lesson>Fractions<\/lesson>\n<page>3<\/page>/);
    // The reply came from the scripted model through the real CLI.
    const requests = await (await fetch(`${mock.url}/_mock/requests`)).json();
    assert.ok(JSON.stringify(requests).includes("/v1/messages"), "the CLI asked the model");
    await screenshot(page, "embed-turn-phone.png");
  });

  step("after a reload the persisted chat comes back with its conversation", async (page) => {
    await page.reload();
    await events(page).getByText("ready same-chat").waitFor({ timeout: 30_000 });
    await chatFrame(page).getByText(REPLY).waitFor({ timeout: 30_000 });
    const stored = await api(`/api/storage/apps/${tutorId}/tutor/chat.json`);
    assert.equal(stored.json.id, embeddedChat, "the same chat, not a new one");
  });

  step("chat.start creates an owner-visible chat and sends its first message", async (page) => {
    await appFrame(page).getByRole("button", { name: "Start a lesson" }).click();
    const line = appFrame(page).getByText(/^Started /);
    await line.waitFor({ timeout: 30_000 });
    const [, id, status] = (await line.textContent()).split(" ");
    assert.equal(status, "started");
    assert.ok(page.url().includes(`app=${tutorId}`), "chat.start does not navigate");
    const drawer = await api("/api/chats");
    assert.ok(drawer.json.some((c) => c.id === id), "the started chat shows in the owner's drawer");
    await eventually(
      "the started chat's reply",
      async () => {
        const detail = await api(`/api/chats/${id}`);
        const text = JSON.stringify(detail.json?.messages ?? []);
        return text.includes("Start a lesson on fractions") && text.includes(REPLY);
      },
      { timeoutMs: POLL_TIMEOUT_MS },
    );
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});
