// Browser journey against the real server: setup → shell → reload → sign out → sign in, plus
// a wrong password, a revoked session, "sign out everywhere" and a desktop-width check.
//
// Environment (both required; this runner builds nothing):
//   MOBIUS_BIN           path to the server binary, e.g. /var/cache/mobius-target/debug/mobius
//   MOBIUS_FRONTEND_DIR  the built PWA (frontend/dist after `npm run build`)
//
// Run: cd tests/e2e && npm ci && MOBIUS_BIN=… MOBIUS_FRONTEND_DIR=… npm test
// Screenshots and the server log go to tests/artifacts/ (git-ignored).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  DESKTOP,
  openBrowser,
  OWNER,
  PHONE,
  screenshot,
  startTestServer,
  stepper,
  tearDown,
  watchProblems,
} from "./harness.mjs";

const TOKEN_KEY = "mobius.token";
const STEP_TIMEOUT = 60_000;

let server;
let phone;
let problems = [];

const step = stepper({ prefix: "journey", timeout: STEP_TIMEOUT, page: () => phone.page });

const heading = (page, name) => page.getByRole("heading", { name, exact: true });

/** Opens the account menu: on a phone it is in the drawer's head (the top bar keeps its width
 *  for the chat's title). */
async function openMenu(page) {
  const account = page.getByRole("button", { name: /account menu/i });
  if (!(await account.isVisible())) await page.getByRole("button", { name: "Open chats" }).click();
  await account.click();
  await page.getByRole("menu").waitFor();
}

async function signIn(page, password = OWNER.password) {
  await heading(page, "Sign in to Möbius").waitFor();
  await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
  await page.getByLabel("Password", { exact: true }).fill(password);
  const answered = page.waitForResponse((r) => r.url().endsWith("/api/auth/token"));
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  return answered;
}

async function storedToken(page) {
  return page.evaluate((key) => localStorage.getItem(key), TOKEN_KEY);
}

/** Fails if the page scrolls sideways or any text input renders below 16px (iOS zoom). */
async function assertFitsAndInputsAreLegible(page) {
  const layout = await page.evaluate(() => ({
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    fontSizes: [...document.querySelectorAll("input, textarea")].map((el) => parseFloat(getComputedStyle(el).fontSize)),
  }));
  assert.ok(layout.overflow <= 0, `page overflows horizontally by ${layout.overflow}px`);
  for (const size of layout.fontSizes) assert.ok(size >= 16, `an input renders at ${size}px`);
}

before(async () => {
  server = await startTestServer();
  phone = await openBrowser(PHONE);
  problems = watchProblems(phone.page);
});

after(() => tearDown({ server, log: "server.log", browsers: [phone] }));

describe("phone journey (390×844)", () => {
  step("a fresh server opens the setup wizard under the strict CSP", async (page) => {
    const response = await page.goto(server.origin + "/");
    assert.match(response.headers()["content-security-policy"] ?? "", /script-src 'self'/);
    await heading(page, "Welcome to Möbius").waitFor();
    await assertFitsAndInputsAreLegible(page);
    await screenshot(page, "setup-phone.png");
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "setup-phone-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
  });

  step("the setup wizard explains what is missing before sending anything", async (page) => {
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByText("Enter a username.").waitFor();
    await page.getByText("Choose a password.").waitFor();
    const focused = await page.evaluate(() => document.activeElement?.getAttribute("name"));
    assert.equal(focused, "username");
  });

  step("setup creates the owner and opens the shell (Enter submits)", async (page) => {
    await page.getByLabel("Username", { exact: true }).fill(OWNER.username);
    await page.getByLabel("Password", { exact: true }).fill(OWNER.password);
    await page.getByLabel("Confirm password", { exact: true }).fill(OWNER.password);
    const created = page.waitForResponse((r) => r.url().endsWith("/api/auth/setup"));
    await page.getByLabel("Confirm password", { exact: true }).press("Enter");
    assert.equal((await created).status(), 200);
    await heading(page, "No chats yet").waitFor();
    assert.ok(await storedToken(page), "a token is stored after setup");
    await assertFitsAndInputsAreLegible(page);
    await screenshot(page, "shell-phone.png");
    await openMenu(page);
    await screenshot(page, "shell-menu-phone.png");
    await page.keyboard.press("Escape");
    await page.getByRole("menu").waitFor({ state: "detached" });
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "shell-phone-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
  });

  step("a reload keeps the owner signed in", async (page) => {
    const checked = page.waitForResponse((r) => r.url().endsWith("/api/auth/session"));
    await page.reload();
    assert.equal((await checked).status(), 200);
    await heading(page, "No chats yet").waitFor();
  });

  step("sign out returns to the sign-in form and forgets the token", async (page) => {
    await openMenu(page);
    await page.getByRole("menuitem", { name: "Sign out", exact: true }).click();
    await heading(page, "Sign in to Möbius").waitFor();
    await page.getByText("You've signed out.").waitFor();
    assert.equal(await storedToken(page), null);
    await screenshot(page, "login-phone.png");
  });

  step("a wrong password shows the error and stays on sign-in", async (page) => {
    const response = await signIn(page, "not the password");
    assert.equal(response.status(), 401);
    await page.getByRole("alert").filter({ hasText: "Incorrect username or password." }).waitFor();
    assert.equal(await storedToken(page), null);
    await screenshot(page, "login-error-phone.png");
    await heading(page, "Sign in to Möbius").waitFor();
  });

  step("signing in opens the shell", async (page) => {
    const response = await signIn(page);
    assert.equal(response.status(), 200);
    await heading(page, "No chats yet").waitFor();
  });

  step("a token revoked elsewhere sends the owner back to sign-in with a note", async (page) => {
    const token = await storedToken(page);
    const revoked = await fetch(`${server.origin}/api/auth/logout-all`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}` },
    });
    assert.equal(revoked.status, 200);
    await page.reload();
    await heading(page, "Sign in to Möbius").waitFor();
    await page.getByText("Your session ended — sign in again.").waitFor();
    assert.equal(await storedToken(page), null);
    assert.equal((await signIn(page)).status(), 200);
    await heading(page, "No chats yet").waitFor();
  });

  step("sign out everywhere ends this session and every other one", async (page) => {
    const token = await storedToken(page);
    await openMenu(page);
    const call = page.waitForResponse((r) => r.url().endsWith("/api/auth/logout-all"));
    await page.getByRole("menuitem", { name: /Sign out everywhere/ }).click();
    assert.equal((await call).status(), 200);
    await page.getByText("You've signed out on every device.").waitFor();
    const session = await fetch(`${server.origin}/api/auth/session`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(session.status, 401);
    assert.equal((await session.json()).code, "token_revoked");
  });

  step("no uncaught errors or CSP violations were logged", async () => {
    assert.deepEqual(problems, []);
  });
});

describe("desktop (1280×800)", () => {
  test("sign-in and the shell lay out at desktop width", { timeout: STEP_TIMEOUT }, async () => {
    const desktop = await openBrowser(DESKTOP);
    try {
      const page = desktop.page;
      const desktopProblems = watchProblems(page);
      await page.goto(server.origin + "/");
      await heading(page, "Sign in to Möbius").waitFor();
      await screenshot(page, "login-desktop.png");
      assert.equal((await signIn(page)).status(), 200);
      await heading(page, "No chats yet").waitFor();
      await assertFitsAndInputsAreLegible(page);
      const sidebar = await page.locator(".sidebar").boundingBox();
      const bar = await page.locator(".topbar").boundingBox();
      assert.ok(sidebar.width >= 240 && sidebar.x === 0, "a persistent sidebar on the left");
      assert.equal(Math.round(sidebar.width + bar.width), 1280, "sidebar and top bar span the window");
      const composer = await page.locator(".composer-box").boundingBox();
      assert.ok(composer.width <= 720 && composer.x > 200, "the composer is centred, not stretched");
      await screenshot(page, "shell-desktop.png");
      assert.deepEqual(desktopProblems, []);
    } finally {
      await desktop.close();
    }
  });
});

describe("install metadata", () => {
  test("the manifest and every icon it lists are served", { timeout: STEP_TIMEOUT }, async () => {
    const response = await fetch(`${server.origin}/manifest.webmanifest`);
    assert.equal(response.status, 200);
    const manifest = await response.json();
    assert.equal(manifest.name, "Möbius");
    assert.equal(manifest.display, "standalone");
    assert.equal(manifest.start_url, "/");
    const sizes = new Set(manifest.icons.map((icon) => icon.sizes));
    assert.ok(sizes.has("192x192") && sizes.has("512x512"), "icons at 192 and 512");
    assert.ok(manifest.icons.some((icon) => icon.purpose.split(" ").includes("maskable")), "a maskable icon");
    for (const icon of manifest.icons) {
      const image = await fetch(new URL(icon.src, server.origin));
      assert.equal(image.status, 200, icon.src);
      const bytes = Buffer.from(await image.arrayBuffer());
      assert.equal(bytes.subarray(1, 4).toString("ascii"), "PNG", `${icon.src} is a PNG`);
      const [width, height] = icon.sizes.split("x").map(Number);
      assert.deepEqual([bytes.readUInt32BE(16), bytes.readUInt32BE(20)], [width, height], `${icon.src} is ${icon.sizes}`);
    }
  });
});
