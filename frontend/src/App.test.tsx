import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";
import { readToken, writeToken } from "./auth/token";
import { authHeader, mockFetch } from "./test/fetchMock";

afterEach(() => {
  vi.unstubAllGlobals();
  sessionStorage.clear();
});

const session = { status: 200, body: { username: "ada", scope: "owner", expires_at: 2_000_000_000 } };
const configured = { status: 200, body: { configured: true, auth_mode: "local" } };
const fresh = { status: 200, body: { configured: false, auth_mode: "local" } };

/** The routes a freshly opened shell calls: an empty chat list, a starter chat, no providers. */
const shellRoutes = {
  "GET /api/chats?limit=50": { status: 200, body: { chats: [], next_cursor: null } },
  "POST /api/chats": (init: RequestInit) => {
    const { id } = JSON.parse(init.body as string) as { id: string };
    return { status: 201, body: { id, title: "", provider: null, created_at: 1, updated_at: 1, activity_at: 1, pinned_at: null, has_messages: false, running: false, pending_question_id: null, queued: 0 } };
  },
  "GET /api/chats/*": { status: 200, body: { id: "x", title: "", provider: null, messages: [], offset: 0, total: 0, has_more: false, running: false, run_id: null, pending_question_id: null, pending_messages: [], seq: 1 } },
  "GET /api/auth/providers/status": { status: 200, body: { default_provider: null, providers: {} } },
  "GET /api/events/system": { status: 404, body: { code: "not_found", message: "No." } },
} as const;

function renderApp() {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <App />
    </QueryClientProvider>,
  );
}

const type = (label: RegExp, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });

describe("boot", () => {
  it("shows the setup wizard on a fresh server and signs straight in after it", async () => {
    const { calls } = mockFetch({
      "GET /api/auth/setup/status": fresh,
      "POST /api/auth/setup": { status: 200, body: { access_token: "tok-new", token_type: "bearer" } },
      "GET /api/auth/session": session,
      ...shellRoutes,
    });
    renderApp();
    await screen.findByRole("heading", { name: "Welcome to Möbius" });
    type(/^username$/i, "  ada ");
    type(/^password$/i, "correct horse");
    type(/^confirm password$/i, "correct horse");
    fireEvent.click(screen.getByRole("button", { name: "Create account" }));

    await screen.findByRole("heading", { name: "No chats yet" });
    expect(readToken()).toBe("tok-new");
    const setupCall = calls.find((c) => c.key === "POST /api/auth/setup");
    expect(JSON.parse(setupCall!.init.body as string)).toEqual({ username: "ada", password: "correct horse" });
    expect(authHeader(calls.find((c) => c.key === "GET /api/auth/session")!.init)).toBe("Bearer tok-new");
  });

  it("shows sign-in on a configured server", async () => {
    mockFetch({ "GET /api/auth/setup/status": configured });
    renderApp();
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    expect(screen.queryByRole("status", { name: /session/i })).toBeNull();
  });

  it("opens the shell directly when the stored token is still valid", async () => {
    writeToken("tok-1");
    const { calls } = mockFetch({ "GET /api/auth/session": session, ...shellRoutes });
    renderApp();
    await screen.findByRole("heading", { name: "No chats yet" });
    expect(calls[0]?.key).toBe("GET /api/auth/session");
    expect(calls.some((c) => c.key === "GET /api/auth/setup/status")).toBe(false);
  });

  it("returns to sign-in with a note when the stored token has expired", async () => {
    writeToken("tok-old");
    mockFetch({
      "GET /api/auth/session": { status: 401, body: { code: "token_expired", message: "Expired." } },
      "GET /api/auth/setup/status": configured,
    });
    renderApp();
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    expect(screen.getByText("Your session ended — sign in again.")).toBeTruthy();
    expect(readToken()).toBeNull();
  });

  it("keeps that note over a reload right after the session ended, and forgets it once signed in", async () => {
    writeToken("tok-old");
    mockFetch({
      "GET /api/auth/session": { status: 401, body: { code: "token_revoked", message: "Revoked." } },
      "GET /api/auth/setup/status": configured,
    });
    const first = renderApp();
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    first.unmount();
    // The reload finds no token (the 401 cleared it) but still says why.
    const second = renderApp();
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    expect(screen.getByText("Your session ended — sign in again.")).toBeTruthy();
    second.unmount();
    writeToken("tok-new");
    mockFetch({ "GET /api/auth/session": session, ...shellRoutes });
    renderApp();
    await screen.findByRole("heading", { name: "No chats yet" });
    expect(sessionStorage.getItem("mobius.login-notice")).toBeNull();
  });

  it("says it couldn't reach the server, and Retry tries again", async () => {
    let up = false;
    mockFetch({ "GET /api/auth/setup/status": () => (up ? configured : "network-error") });
    renderApp();
    await screen.findByRole("heading", { name: "Couldn't reach Möbius" });
    up = true;
    fireEvent.click(screen.getByRole("button", { name: "Retry" }));
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
  });

  it("does not guess sign-in when the session check fails for another reason", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": { status: 500, body: { code: "internal", message: "Boom." } } });
    renderApp();
    await screen.findByRole("heading", { name: "Couldn't reach Möbius" });
    expect(screen.getByText(/Boom\./)).toBeTruthy();
    expect(readToken()).toBe("tok-1");
  });
});

describe("setup form", () => {
  it("validates before sending anything and focuses the first problem", async () => {
    const { calls } = mockFetch({ "GET /api/auth/setup/status": fresh });
    renderApp();
    await screen.findByRole("heading", { name: "Welcome to Möbius" });
    type(/^password$/i, "short");
    type(/^confirm password$/i, "shorter");
    fireEvent.click(screen.getByRole("button", { name: "Create account" }));

    expect(screen.getByText("Enter a username.")).toBeTruthy();
    expect(screen.getByText("Use at least 8 characters.")).toBeTruthy();
    expect(screen.getByText("Passwords don't match.")).toBeTruthy();
    expect(document.activeElement).toBe(screen.getByLabelText(/^username$/i));
    expect(screen.getByLabelText(/^username$/i).getAttribute("aria-invalid")).toBe("true");
    expect(calls.filter((c) => c.init.method === "POST")).toHaveLength(0);
  });

  it("shows a server rejection in the alert region", async () => {
    mockFetch({
      "GET /api/auth/setup/status": fresh,
      "POST /api/auth/setup": { status: 400, body: { code: "invalid_username", message: "Usernames cannot contain control characters." } },
    });
    renderApp();
    await screen.findByRole("heading", { name: "Welcome to Möbius" });
    type(/^username$/i, "ada");
    type(/^password$/i, "correct horse");
    type(/^confirm password$/i, "correct horse");
    fireEvent.click(screen.getByRole("button", { name: "Create account" }));
    await waitFor(() => expect(screen.getByRole("alert").textContent).toBe("Usernames cannot contain control characters."));
  });
});

describe("login form", () => {
  async function submitLogin(password: string) {
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    type(/^username$/i, "ada");
    type(/^password$/i, password);
    fireEvent.submit(screen.getByRole("form", { name: "Sign in" }));
  }

  it("says the username or password is wrong on a 401 and stays put", async () => {
    mockFetch({
      "GET /api/auth/setup/status": configured,
      "POST /api/auth/token": { status: 401, body: { code: "invalid_credentials", message: "Incorrect username or password." } },
    });
    renderApp();
    await submitLogin("wrong password");
    await waitFor(() => expect(screen.getByRole("alert").textContent).toBe("Incorrect username or password."));
    expect(screen.getByRole("heading", { name: "Sign in to Möbius" })).toBeTruthy();
  });

  it("says how long to wait when throttled", async () => {
    mockFetch({
      "GET /api/auth/setup/status": configured,
      "POST /api/auth/token": {
        status: 429,
        body: { code: "too_many_attempts", message: "Too many attempts; try again in 8 s." },
        headers: { "Retry-After": "8" },
      },
    });
    renderApp();
    await submitLogin("whatever1");
    await waitFor(() => expect(screen.getByRole("alert").textContent).toBe("Too many attempts — try again in 8 s."));
  });

  it("disables the submit button while signing in", async () => {
    let release: (r: Response) => void = () => undefined;
    mockFetch({ "GET /api/auth/setup/status": configured });
    renderApp();
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    vi.stubGlobal("fetch", vi.fn(() => new Promise<Response>((resolve) => (release = resolve))));
    type(/^username$/i, "ada");
    type(/^password$/i, "secret-pass");
    fireEvent.submit(screen.getByRole("form", { name: "Sign in" }));
    const button = await screen.findByRole("button", { name: "Signing in…" });
    expect((button as HTMLButtonElement).disabled).toBe(true);
    release(new Response(JSON.stringify({ code: "invalid_credentials", message: "x" }), { status: 401 }));
    await screen.findByRole("button", { name: "Sign in" });
  });
});

describe("shell", () => {
  it("signs out locally and shows sign-in with a note", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": session, "GET /api/auth/setup/status": configured });
    renderApp();
    fireEvent.click(await screen.findByRole("button", { name: /account menu/i }));
    fireEvent.click(screen.getByRole("menuitem", { name: "Sign out" }));
    await screen.findByRole("heading", { name: "Sign in to Möbius" });
    expect(screen.getByText("You've signed out.")).toBeTruthy();
    expect(readToken()).toBeNull();
  });

  it("signs out everywhere through the server before signing out here", async () => {
    writeToken("tok-1");
    const { calls } = mockFetch({
      "GET /api/auth/session": session,
      "POST /api/auth/logout-all": { status: 200, body: { ok: true } },
    });
    renderApp();
    fireEvent.click(await screen.findByRole("button", { name: /account menu/i }));
    fireEvent.click(screen.getByRole("menuitem", { name: /Sign out everywhere/ }));
    await screen.findByText("You've signed out on every device.");
    expect(authHeader(calls.find((c) => c.key === "POST /api/auth/logout-all")!.init)).toBe("Bearer tok-1");
    expect(readToken()).toBeNull();
  });

  it("keeps the owner signed in and explains when signing out everywhere fails", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": session, "POST /api/auth/logout-all": "network-error", ...shellRoutes });
    renderApp();
    fireEvent.click(await screen.findByRole("button", { name: /account menu/i }));
    fireEvent.click(screen.getByRole("menuitem", { name: /Sign out everywhere/ }));
    await waitFor(() => expect(screen.getByRole("alert").textContent).toMatch(/Couldn't sign out everywhere/));
    expect(readToken()).toBe("tok-1");
  });

  it("closes the menu on Escape and returns focus to its button", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": session });
    renderApp();
    const button = await screen.findByRole("button", { name: /account menu/i });
    fireEvent.click(button);
    const menu = screen.getByRole("menu");
    expect(document.activeElement).toBe(screen.getByRole("menuitem", { name: "Sign out" }));
    fireEvent.keyDown(menu, { key: "Escape" });
    expect(screen.queryByRole("menu")).toBeNull();
    expect(document.activeElement).toBe(button);
  });
});
