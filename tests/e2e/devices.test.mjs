// Signed-in devices and pairing in the PWA against the real server: Settings › Account lists
// this device and a phone signed in elsewhere; signing the phone out ends its session at once
// (it lands on sign-in); a third browser pairs with the code (and the QR's address) shown on the
// desktop, without the password. Settings › About shows the version and, without a feed, that
// update checks are off.
//
// Environment: MOBIUS_BIN and MOBIUS_FRONTEND_DIR, as for journey.test.mjs.

import assert from "node:assert/strict";
import { after, before, describe } from "node:test";
import { DESKTOP, PHONE, apiClient, openBrowser, screenshot, setupOwner, signInAsOwner, startTestServer, stepper, tearDown, watchProblems } from "./harness.mjs";

const STEP_TIMEOUT = 60_000;

let server;
let desktop;
let phone;
let paired;
let token;
let problems = [];
let code;

const step = stepper({ prefix: "devices", timeout: STEP_TIMEOUT, page: () => desktop.page });
const api = apiClient(() => server.origin, () => token);

before(async () => {
  server = await startTestServer();
  desktop = await openBrowser(DESKTOP);
  phone = await openBrowser(PHONE);
  paired = await openBrowser(PHONE);
  problems = watchProblems(desktop.page);
});

after(() => tearDown({ server, log: "server-devices.log", browsers: [desktop, phone, paired] }));

async function signIn(page) {
  await page.goto(server.origin + "/");
  await signInAsOwner(page);
  await page.getByRole("button", { name: "New chat" }).first().waitFor();
}

describe("devices and pairing (desktop and two phones)", () => {
  step("the owner is signed in on the desktop and on a phone", async (page) => {
    token = await setupOwner(server.origin);
    await signIn(page);
    await signIn(phone.page);
    const { json } = await api("/api/auth/devices");
    assert.equal(json.devices.filter((d) => !d.legacy).length, 3, "setup, desktop and phone sessions");
  });

  step("Settings › Account lists the devices, this one marked", async (page) => {
    await page.goto(server.origin + "/settings/account");
    const list = page.getByRole("list", { name: "Signed-in devices" });
    await list.waitFor();
    await page.waitForFunction(() => document.querySelectorAll(".device-row").length === 3);
    const current = list.locator(".device-row[data-current]");
    assert.equal(await current.count(), 1);
    assert.match(await current.textContent(), /This device/);
    assert.match(await current.textContent(), /127\.0\.0\.1/);
    await screenshot(page, "devices-account-desktop.png");
  });

  step("signing the phone out ends its session at once", async (page) => {
    const phoneToken = await phone.page.evaluate(() => localStorage.getItem("mobius.token"));
    const { json } = await api("/api/auth/devices", { token: phoneToken });
    const phoneRow = json.devices.find((d) => d.current);
    assert.ok(phoneRow, "the phone sees itself as current");
    await page.locator(`.device-row[data-device="${phoneRow.id}"]`).getByRole("button", { name: /^Sign out/ }).click();
    await page.waitForFunction((id) => !document.querySelector(`.device-row[data-device="${id}"]`), phoneRow.id);
    assert.equal((await api("/api/auth/session", { token: phoneToken })).status, 401);
    await phone.page.reload();
    await phone.page.getByRole("heading", { name: "Sign in to Möbius" }).waitFor();
    assert.equal((await api("/api/auth/session")).status, 200, "the desktop stays signed in");
  });

  step("the desktop shows a pairing code and its QR code", async (page) => {
    await page.getByRole("button", { name: "Pair a new device" }).click();
    const digits = page.getByLabel("Pairing code");
    await digits.waitFor();
    code = (await digits.textContent()).trim();
    assert.match(code, /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    const qr = page.getByRole("img", { name: /QR code for http/ });
    assert.match(await qr.getAttribute("aria-label"), new RegExp(`/pair\\?code=${code}$`));
    await screenshot(page, "devices-pairing-desktop.png");
  });

  step("a new phone opens the QR's address and is signed in without the password", async () => {
    const page = paired.page;
    await page.goto(`${server.origin}/pair?code=${code}`);
    await page.getByRole("heading", { name: "Pair this device" }).waitFor();
    assert.equal(await page.getByLabel("Pairing code").inputValue(), code);
    await screenshot(page, "devices-pair-phone.png");
    await page.getByRole("button", { name: "Pair", exact: true }).click();
    await page.getByRole("button", { name: "New chat" }).first().waitFor();
    // The pairing address (and its code) is gone from the address bar and history.
    assert.doesNotMatch(new URL(page.url()).pathname + new URL(page.url()).search, /pair|code=/);
  });

  step("the desktop sees the pairing and the new device", async (page) => {
    await page.getByText(/^Paired: /).waitFor();
    await page.waitForFunction(() => document.querySelectorAll(".device-row").length === 3);
    // The code was single use.
    const again = await fetch(`${server.origin}/api/auth/pair`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }) });
    assert.equal(again.status, 401);
  });

  step("the phone that was signed out can pair with a typed code", async (page) => {
    await page.getByRole("button", { name: "Pair a new device" }).click();
    const typed = (await page.getByLabel("Pairing code").textContent()).trim();
    const p = phone.page;
    await p.getByRole("button", { name: "Pair with a code from a signed-in device" }).click();
    await p.getByLabel("Pairing code").fill(typed.toLowerCase().replace("-", " "));
    await p.getByRole("button", { name: "Pair", exact: true }).click();
    await p.getByRole("button", { name: "New chat" }).first().waitFor();
  });

  step("Settings › About shows the version and that checks are off", async (page) => {
    await page.goto(server.origin + "/settings/about");
    await page.locator("[data-version]").filter({ hasText: /\d+\.\d+\.\d+/ }).waitFor();
    await page.getByText("Update checks are off on this server.").waitFor();
    await screenshot(page, "about-desktop.png");
    assert.deepEqual(problems, []);
  });
});
