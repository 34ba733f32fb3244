// Attachments on a phone against the real server and a real Claude Code turn (scripted model):
// attach a picture through the file chooser, see its upload and thumbnail, send it, see the
// model get it and the agent's reply with the image it published (`mobius media publish`),
// open the lightbox, and find no owner token in any image URL.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR (as for journey.test.mjs); the Claude CLI from
// MOBIUS_CLAUDE_BIN or MOBIUS_CLI_DIR (scripts/test installs it).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import { deflateSync } from "node:zlib";
import {
  PHONE,
  agentEnv,
  apiClient,
  assertFitsAndLegible,
  claudeBin,
  openBrowser,
  screenshot,
  setupOwner,
  startMockAnthropic,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const STEP_TIMEOUT = 90_000;
const TOKEN_KEY = "mobius.token";
const CHAT = "pics";

/** CRC-32 of a PNG chunk (type and data). */
function crc32(bytes) {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

/** A `width`×`height` PNG: a horizontal gradient of `[r, g, b]`. */
function png(width, height, [r, g, b]) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      const shade = Math.round((x / width) * 120);
      raw.set([Math.min(255, r + shade), Math.min(255, g + shade), Math.min(255, b + shade)], row + 1 + x * 3);
    }
  }
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, "ascii"), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

const PHOTO = png(320, 240, [30, 90, 200]);
const PLOT = png(200, 120, [200, 60, 40]);
/** Where the published plot lands: named after its bytes (uploads/media.rs `media_name`). */
const PLOT_URL = `/api/chats/${CHAT}/media/plot-${createHash("sha256").update(PLOT).digest("hex").slice(0, 8)}.png`;
const SCRIPT = {
  side_text: "Pictures",
  steps: [
    {
      text: "Let me publish the plot.",
      tool_use: { name: "Bash", input: { command: "mobius media publish agent-home/plot.png --alt Plot", description: "publish the plot" } },
    },
    { text: `I see your photo. Here is the plot I made:\n\n![The plot](${PLOT_URL})` },
  ],
};

let mock;
let server;
let phone;
let token;
let problems = [];

const step = stepper({ prefix: "attachments", timeout: STEP_TIMEOUT, page: () => phone.page });
const api = apiClient(() => server.origin, () => token);

if (!existsSync(claudeBin())) throw new Error(`no Claude CLI at ${claudeBin()} (scripts/test installs it)`);

/** Every image URL on the page. */
const imageSources = (page) => page.evaluate(() => [...document.images].map((img) => img.getAttribute("src") ?? ""));

/** Waits until `locator` (an img) has loaded pixels. */
async function loaded(locator) {
  await locator.waitFor();
  await locator.page().waitForFunction((img) => img.complete && img.naturalWidth > 0, await locator.elementHandle());
}

describe("attachments on a phone (real server, real Claude Code, scripted model)", () => {
  before(async () => {
    mock = await startMockAnthropic(SCRIPT);
    server = await startTestServer(agentEnv(mock.url));
    phone = await openBrowser(PHONE);
    problems = watchProblems(phone.page);
  });

  after(() => tearDown({ server, log: "attachments-server.log", browsers: [phone], mocks: [mock] }));

  step("the owner has Claude connected and a chat open", async (page) => {
    token = await setupOwner(server.origin);
    assert.equal((await api("/api/providers/claude/api-key", { method: "POST", body: { api_key: "sk-ant-mock" } })).status, 200);
    assert.equal((await api("/api/chats", { method: "POST", body: { id: CHAT, title: "Pictures" } })).status, 201);
    await mkdir(join(server.dataDir, "agent-home"), { recursive: true });
    await writeFile(join(server.dataDir, "agent-home", "plot.png"), PLOT);
    await page.goto(`${server.origin}/chat/${CHAT}`);
    await page.evaluate(([key, value]) => localStorage.setItem(key, value), [TOKEN_KEY, token]);
    await page.reload();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
  });

  step("a picture attached through the file chooser uploads and shows as a chip", async (page) => {
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Attach files" }).click();
    await (await chooser).setFiles({ name: "photo.png", mimeType: "image/png", buffer: PHOTO });
    const chip = page.getByRole("list", { name: "Attached files" }).getByRole("listitem");
    await chip.getByText("photo.png").waitFor();
    await page.getByRole("button", { name: "Remove photo.png" }).waitFor();
    // Uploaded: the progress bar goes, the file is in the chat.
    await page.getByRole("progressbar", { name: "Uploading photo.png" }).waitFor({ state: "detached" });
    const listed = (await api(`/api/chats/${CHAT}/uploads`)).json;
    assert.deepEqual(listed.map((f) => [f.name, f.mime_type, f.width, f.height]), [["photo.png", "image/png", 320, 240]]);
    await screenshot(page, "attachments-chip-phone.png");
  });

  step("sent, the message shows its thumbnail and the agent's reply shows the image it published", async (page) => {
    await page.getByRole("textbox", { name: "Message" }).fill("What is in this photo?");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const userRow = page.locator(".row-user").last();
    const thumb = userRow.getByRole("img", { name: "photo.png" });
    await loaded(thumb);
    assert.match(await thumb.getAttribute("src"), /\/api\/chats\/pics\/uploads\/photo\.png\?token=[^&]+&preview=true$/);
    assert.equal(await page.getByRole("list", { name: "Attached files" }).count(), 0, "the chip went with the message");
    const reply = page.locator(".row-assistant").last();
    await reply.getByText("I see your photo.").waitFor({ timeout: 60_000 });
    const published = reply.getByRole("img", { name: "The plot" });
    await loaded(published);
    assert.ok((await published.getAttribute("src")).startsWith(`${PLOT_URL}?token=`), "the published image, with a media token");
    await screenshot(page, "attachments-reply-phone.png");
    await assertFitsAndLegible(page, "a chat with pictures");
  });

  step("the model request carried the picture", async () => {
    const requests = await mock.requests();
    const images = requests.filter((r) => r.kind === "main").flatMap((r) => r.images ?? []);
    const sha = createHash("sha256").update(PHOTO).digest("hex");
    assert.ok(images.some((i) => i.sha256 === sha && i.media_type === "image/png"), `no request carried the photo: ${JSON.stringify(images)}`);
  });

  step("a tap opens the lightbox on the full picture; Escape closes it", async (page) => {
    await page.locator(".row-user").last().getByRole("button", { name: "Open image photo.png" }).click();
    const dialog = page.getByRole("dialog", { name: "Image 1 of 1: photo.png" });
    await dialog.waitFor();
    const full = dialog.getByRole("img", { name: "photo.png" });
    await loaded(full);
    assert.doesNotMatch(await full.getAttribute("src"), /preview=true/, "the lightbox shows the original");
    await dialog.getByRole("link", { name: "Download photo.png" }).waitFor();
    await dialog.getByRole("button", { name: "Zoom in" }).click();
    await dialog.getByRole("button", { name: "Zoom out" }).waitFor();
    await screenshot(page, "attachments-lightbox-phone.png");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
  });

  step("offline, a message with a picture waits and goes with it when the phone is back online", async (page) => {
    await phone.context.setOffline(true);
    await page.getByText("You're offline").waitFor();
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Attach files" }).click();
    await (await chooser).setFiles({ name: "later.png", mimeType: "image/png", buffer: png(64, 48, [20, 160, 60]) });
    await page.getByRole("list", { name: "Attached files" }).getByText("later.png").waitFor();
    await page.getByRole("textbox", { name: "Message" }).fill("And this one, when you can.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.getByText("Waiting for the connection").waitFor();
    assert.equal((await api(`/api/chats/${CHAT}/uploads`)).json.length, 1, "nothing was uploaded offline");
    await screenshot(page, "attachments-waiting-offline-phone.png");
    await phone.context.setOffline(false);
    const row = page.locator(".row-user").filter({ hasText: "And this one, when you can." });
    await loaded(row.getByRole("img", { name: "later.png" }));
    const detail = (await api(`/api/chats/${CHAT}`)).json;
    const sent = detail.messages.filter((m) => m.role === "user").at(-1);
    assert.deepEqual(sent.attachments.map((a) => a.name), ["later.png"], "the message went with its picture");
  });

  step("no image URL carries the owner's token, and nothing went wrong on the page", async (page) => {
    const sources = await imageSources(page);
    assert.ok(sources.some((s) => s.includes("token=")), "images load with media tokens");
    assert.ok(!sources.some((s) => s.includes(token)), "the owner's token is never in a URL");
    assert.deepEqual(problems, []);
  });
});
