// Memory in the PWA against the real server: a chat's info sheet shows its note and saves the
// owner's edit, and shows what the agent is given (the memory in it, masked); Settings › Memory saves the owner's memory file and the switch, and lists the
// skills with the agent's own ones.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR, as for journey.test.mjs.

import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import { PHONE, REPO, apiClient, eventually, openBrowser, screenshot, setupOwner, startTestServer, stepper, tearDown, watchProblems } from "./harness.mjs";

const STEP_TIMEOUT = 60_000;
const TOKEN_KEY = "mobius.token";

let server;
let phone;
let token;
let problems = [];

const step = stepper({ prefix: "memory", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

before(async () => {
  // The agent's constitution: the context inspector composes the prompt a first turn would pin.
  server = await startTestServer({ MOBIUS_SKILL_DIR: join(REPO, "skill") });
  phone = await openBrowser(PHONE);
  problems = watchProblems(phone.page);
});

after(() => tearDown({ server, log: "server-memory.log", browsers: [phone] }));

describe("memory (390×844)", () => {
  step("the owner has a chat with a note", async (page) => {
    token = await setupOwner(server.origin);
    const messages = [{ role: "user", content: "Plan my garden", ts: 1_700_000_000_000 }];
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "garden", title: "Garden plans", messages } })).status, 201);
    const note = { digest: "Planned four raised beds.", summary: "Tomatoes first." };
    assert.equal((await api("/api/chats/garden/note", { method: "PUT", body: note })).status, 200);
    await page.goto(server.origin + "/chat/garden");
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.reload();
    await page.getByRole("button", { name: "Chat info" }).waitFor();
  });

  step("the info sheet shows the note and saves an edit", async (page) => {
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    const digest = sheet.getByLabel("Digest");
    await page.waitForFunction(() => document.querySelector(".note-digest")?.value === "Planned four raised beds.");
    await screenshot(page, "memory-info-sheet-phone.png");
    await digest.fill("Four raised beds; tomatoes and beans.");
    await sheet.getByRole("button", { name: "Save" }).click();
    // The note was already the owner's (set through the API above): wait for the stored text.
    await eventually("the note is saved", async () => (await api("/api/chats/garden/note")).json.note.digest === "Four raised beds; tomatoes and beans.");
    await sheet.getByText(/Edited by you/).waitFor();
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
  });

  step("the info sheet shows what the agent is given, the memory in it with a planted key masked", async (page) => {
    await mkdir(join(server.dataDir, "memory"), { recursive: true });
    await writeFile(join(server.dataDir, "memory", "owner.md"), "Grows tomatoes.\nKey: sk-ant-api03-PLANTEDplantedPLANTED0123\n");
    await page.getByRole("button", { name: "Chat info" }).click();
    const sheet = page.getByRole("dialog", { name: "Chat info" });
    await sheet.getByRole("button", { name: "What the agent was given" }).click();
    const given = sheet.getByRole("region", { name: "What the agent was given" });
    const memory = given.getByLabel("Memory", { exact: true });
    await memory.getByText(/Grows tomatoes\./).waitFor();
    const text = await given.innerText();
    assert.match(text, /Key: \[redacted\]/);
    assert.doesNotMatch(text, /PLANTED/);
    await given.getByText(/Not pinned yet/).waitFor();
    await screenshot(page, "memory-agent-context-phone.png");
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "detached" });
  });

  step("Settings › Memory saves the memory file and the switch, and lists the agent's skills", async (page) => {
    const skills = join(server.dataDir, "skills");
    await mkdir(skills, { recursive: true });
    await writeFile(join(skills, "charts.md"), "---\ndescription: Draw charts with recharts\n---\n");
    await page.getByRole("button", { name: "Open chats" }).click();
    await page.getByRole("dialog", { name: "Chats" }).getByRole("button", { name: "Settings" }).click();
    await page.getByRole("navigation", { name: "Settings sections" }).getByRole("button", { name: /^Memory/ }).click();
    const file = page.getByLabel("Memory file");
    await file.waitFor();
    await file.fill("- The owner's cat is called Miso.");
    await page.getByRole("region", { name: "Memory" }).getByRole("button", { name: "Save" }).click();
    await eventually("the memory file is saved", async () => (await api("/api/memory")).json.owner_md === "- The owner's cat is called Miso.");
    await page.getByLabel("New chats remember").selectOption("off");
    await eventually("the switch is off", async () => (await api("/api/memory")).json.enabled === false);
    await page.reload();
    await page.getByText("Draw charts with recharts").waitFor();
    await page.getByText("Written by the agent").first().waitFor();
    await screenshot(page, "memory-settings-phone.png");
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});
