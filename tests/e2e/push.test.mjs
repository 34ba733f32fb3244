// Notifications in Chromium: the real server runs the real Claude Code CLI against the scripted
// model (tests/fake-providers/mock_anthropic.py), which asks a two-option question. The server
// pushes it to a push service played by this test (a local endpoint that decrypts the RFC 8291
// payload with the subscription's private key); the decrypted push is delivered to the shell's
// registered service worker through the DevTools protocol (ServiceWorker.deliverPushMessage).
// The test checks the notification the worker shows, with its buttons, then presses "Red" and
// checks the answer reached the CLI's turn and the turn went on, and that the spent action
// token changes nothing when replayed. A tap without a button (as on iOS) opens the decision
// screen, which loads offline from the worker's cache and answers with the same kind of token.
//
// Environment: as chat.test.mjs (MOBIUS_BIN, MOBIUS_FRONTEND_DIR, the Claude CLI).

import assert from "node:assert/strict";
import { createDecipheriv, createECDH, hkdfSync, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { once } from "node:events";
import { resolve } from "node:path";
import { after, before, describe } from "node:test";
import {
  agentEnv,
  apiClient,
  ARTIFACTS,
  claudeBin,
  eventually,
  openBrowser,
  OWNER,
  PHONE,
  requireEnv,
  saveArtifact,
  screenshot,
  signInAsOwner,
  startMockAnthropic,
  startServer,
  stepper,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;
const TURN_TIMEOUT = 60_000;

const SCRIPT = {
  steps: [
    {
      tool_use: {
        name: "AskUserQuestion",
        input: {
          questions: [
            {
              question: "Which color?",
              header: "Color",
              multiSelect: false,
              options: [
                { label: "Blue", description: "Calm" },
                { label: "Red", description: "Loud" },
              ],
            },
          ],
        },
      },
    },
    { text: "You picked from the notification." },
    {
      tool_use: {
        name: "AskUserQuestion",
        input: {
          questions: [
            {
              question: "Which size?",
              header: "Size",
              multiSelect: false,
              options: [
                { label: "Small", description: "" },
                { label: "Large", description: "" },
              ],
            },
          ],
        },
      },
    },
    { text: "Size taken from the decision screen." },
  ],
  default: { text: "Default reply." },
};

const missing = ["MOBIUS_BIN", "MOBIUS_FRONTEND_DIR"].filter((name) => !process.env[name]);
if (missing.length) throw new Error(`${missing.join(", ")} not set (run scripts/test)`);
if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/** A push service on 127.0.0.1 holding one subscription's private key: decrypts what arrives. */
async function startPushService() {
  const ecdh = createECDH("prime256v1");
  const publicKey = ecdh.generateKeys();
  const auth = randomBytes(16);
  const received = [];
  const http = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        assert.equal(req.headers["content-encoding"], "aes128gcm");
        assert.match(req.headers.authorization ?? "", /^vapid t=[\w-]+\.[\w-]+\.[\w-]+, k=[\w-]+$/);
        const body = Buffer.concat(chunks);
        const salt = body.subarray(0, 16);
        const idlen = body[20];
        const senderKey = body.subarray(21, 21 + idlen);
        const record = body.subarray(21 + idlen);
        const shared = ecdh.computeSecret(senderKey);
        const info = Buffer.concat([Buffer.from("WebPush: info\0"), publicKey, senderKey]);
        const ikm = Buffer.from(hkdfSync("sha256", shared, auth, info, 32));
        const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
        const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
        const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
        decipher.setAuthTag(record.subarray(record.length - 16));
        const plain = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
        const end = plain.lastIndexOf(2);
        const text = plain.subarray(0, end).toString("utf8");
        received.push({ headers: req.headers, text, json: JSON.parse(text) });
        res.writeHead(201).end();
      } catch (error) {
        received.push({ error: String(error) });
        res.writeHead(400).end();
      }
    });
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  const endpoint = `http://127.0.0.1:${http.address().port}/push/phone`;
  return {
    subscription: { endpoint, keys: { p256dh: b64url(publicKey), auth: b64url(auth) }, label: "Chromium under test" },
    /** Waits for the next push whose JSON satisfies `match`. */
    async next(match, timeout = TURN_TIMEOUT) {
      const found = await eventually("a matching push", () => received.find((r) => r.error || match(r.json)), { timeoutMs: timeout }).catch((error) => {
        throw new Error(`${error.message}; got ${JSON.stringify(received)}`);
      });
      assert.equal(found.error, undefined, found.error);
      return found;
    },
    stop: () => new Promise((r) => http.close(r)),
  };
}

let mock;
let server;
let phone;
let pushService;
let token;
let pushed;
const api = apiClient(() => server.origin, () => token);
const step = stepper({ prefix: "push", timeout: STEP_TIMEOUT, page: () => phone.page });

/** The shell's service worker as Playwright sees it. */
function shellWorker() {
  const worker = phone.context.serviceWorkers().find((w) => w.url().startsWith(server.origin));
  assert.ok(worker, "the shell's service worker");
  return worker;
}

/** What the worker shows now: `[{title, body, tag, actions}]`. */
function shownNotifications() {
  return shellWorker().evaluate(async () =>
    (await self.registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => a.title) })),
  );
}

/**
 * Delivers `text` as a push to the shell's registration over the DevTools protocol and waits
 * until the worker shows a notification with `body`. A delivery made while the worker is being
 * started can be dropped by the browser; it is repeated once then (same tag: never shown twice).
 */
async function deliverPush(page, text, body) {
  const cdp = await page.context().newCDPSession(page);
  const registration = new Promise((resolveId) => {
    cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
      const live = registrations.find((r) => !r.isDeleted && r.scopeURL === server.origin + "/");
      if (live) resolveId(live.registrationId);
    });
  });
  await cdp.send("ServiceWorker.enable");
  const registrationId = await registration;
  try {
    for (let attempt = 1; ; attempt += 1) {
      await cdp.send("ServiceWorker.deliverPushMessage", { origin: server.origin, registrationId, data: text });
      try {
        return await eventually("the notification", async () => (await shownNotifications()).find((n) => n.body === body), { timeoutMs: 10_000 });
      } catch (error) {
        if (attempt === 2) throw error;
        console.log("# the first delivery was not shown; delivering again");
      }
    }
  } finally {
    await cdp.detach();
  }
}

describe("notifications in Chromium: a question answered from its notification", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startServer({
      bin: process.env.MOBIUS_BIN,
      frontendDir: resolve(requireEnv("MOBIUS_FRONTEND_DIR", "the built frontend")),
      env: { ...agentEnv(mock.url), MOBIUS_PUSH_ALLOW_LOOPBACK: "1" },
    });
    pushService = await startPushService();
    phone = await openBrowser(PHONE);
    await phone.context.grantPermissions(["notifications"], { origin: server.origin });
  });

  after(async () => {
    await phone?.close();
    if (server) {
      await saveArtifact(ARTIFACTS, "push-server.log", server.logs());
      await server.stop();
    }
    await pushService?.stop();
    await mock?.stop();
  });

  step("the shell registers its service worker; the phone's subscription is stored", async (page) => {
    const setup = await fetch(server.origin + "/api/auth/setup", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(OWNER),
    });
    assert.equal(setup.status, 200);
    token = (await setup.json()).access_token;
    assert.equal((await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } })).status, 200);
    await page.goto(server.origin + "/");
    await page.waitForFunction(() => navigator.serviceWorker?.controller !== null, null, { timeout: 30_000 });
    // A push reaches only an activated worker (claiming the page happens while it activates).
    await page.waitForFunction(async () => (await navigator.serviceWorker.ready).active?.state === "activated", null, { timeout: 30_000 });
    // Headless Chromium has no push service of its own: the test's stands in for it.
    const stored = await api("/api/push/subscribe", { method: "POST", body: pushService.subscription });
    assert.equal(stored.status, 201, stored.text);
  });

  step("a question from the real CLI is pushed, and the worker shows it with its buttons", async (page) => {
    assert.equal((await api("/api/chats", { method: "POST", body: { id: "push-chat", title: "Paint the shed" } })).status, 201);
    const sent = await api("/api/chats/push-chat/messages", { method: "POST", body: { content: "pick a color", cid: "m1" } });
    assert.ok(sent.status < 300, sent.text);
    pushed = await pushService.next((p) => p.kind === "question");
    assert.deepEqual(pushed.json.actions, [
      { action: "option-0", title: "Blue" },
      { action: "option-1", title: "Red" },
    ]);
    assert.equal(pushed.json.title, "Paint the shed");
    assert.equal(pushed.headers.urgency, "high");

    const shown = await deliverPush(page, pushed.text, "Which color?");
    assert.deepEqual(shown, { title: "Paint the shed", body: "Which color?", tag: "chat:push-chat", actions: ["Blue", "Red"] });
  });

  step("pressing Red answers the CLI's question from the service worker and the turn goes on", async () => {
    // No DevTools command clicks a notification: dispatch the click the platform would.
    await shellWorker().evaluate(async () => {
      const [notification] = await self.registration.getNotifications();
      self.dispatchEvent(new NotificationEvent("notificationclick", { notification, action: "option-1" }));
    });
    const detail = await eventually(
      "the turn to finish after the answer",
      async () => {
        const r = await api("/api/chats/push-chat");
        return r.json?.running === false && r.json.pending_question_id === null ? r.json : null;
      },
      { timeoutMs: TURN_TIMEOUT },
    );
    const text = JSON.stringify(detail.messages);
    assert.ok(text.includes("You picked from the notification."), text);
    assert.ok(detail.messages.some((m) => JSON.stringify(m.blocks ?? []).includes('"Which color?":"Red"')), text);
    const requests = await mock.requests();
    assert.ok(JSON.stringify(requests).includes("Red"), "the model saw the owner's answer");
  });

  step("the spent action token changes nothing when replayed", async (page) => {
    const replay = await fetch(server.origin + "/api/push/action", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: pushed.json.action_token, question_id: pushed.json.question_id, action: "option-0" }),
    });
    assert.equal(replay.status, 410);
    assert.equal((await replay.json()).code, "action_token_used");
    await page.goto(server.origin + "/chat/push-chat");
    await signInAsOwner(page);
    await page.getByText("You picked from the notification.").waitFor({ timeout: 30_000 });
    await screenshot(page, "push-answered-phone.png");
  });

  step("without buttons (iOS), a tap opens the decision screen, which loads offline and answers", async (page) => {
    const sent = await api("/api/chats/push-chat/messages", { method: "POST", body: { content: "now a size", cid: "m2" } });
    assert.ok(sent.status < 300, sent.text);
    const second = await pushService.next((p) => p.kind === "question" && p.body === "Which size?");
    await deliverPush(page, second.text, "Which size?");
    // A tap on the notification itself (no button): the worker brings the app to the question.
    await shellWorker().evaluate(async () => {
      const [notification] = await self.registration.getNotifications();
      self.dispatchEvent(new NotificationEvent("notificationclick", { notification, action: "" }));
    });
    await page.waitForURL((url) => url.searchParams.get("question") === second.json.question_id);
    const sheet = page.getByRole("dialog", { name: "Paint the shed" });
    await sheet.getByText("Which size?").waitFor();
    // Offline, the screen still opens: the shell is precached and the question was kept.
    await phone.context.setOffline(true);
    await page.reload();
    await sheet.getByRole("button", { name: "Large" }).waitFor();
    await screenshot(page, "push-decision-offline-phone.png");
    await phone.context.setOffline(false);
    await sheet.getByRole("button", { name: "Large" }).click();
    await sheet.waitFor({ state: "detached" });
    const detail = await eventually(
      "the turn to finish after the decision screen's answer",
      async () => {
        const r = await api("/api/chats/push-chat");
        return r.json?.running === false && r.json.pending_question_id === null ? r.json : null;
      },
      { timeoutMs: TURN_TIMEOUT },
    );
    assert.ok(JSON.stringify(detail.messages).includes("Size taken from the decision screen."));
    assert.ok(JSON.stringify(detail.messages).includes('"Which size?":"Large"'));
  });
});
