import { afterEach, describe, expect, it } from "vitest";
import { mockFetch } from "../test/fetchMock";
import { APP_TOKENS_KEY } from "./keys";
import { ensureAppToken, forgetAppTokens, heldToken, needsRefresh, REFRESH_BEFORE_MS, refreshDelay } from "./tokens";

const HOUR = 3_600_000;

afterEach(() => forgetAppTokens());

describe("app token refresh timing", () => {
  it("refreshes five minutes before expiry", () => {
    const now = 1_000_000;
    expect(REFRESH_BEFORE_MS).toBe(5 * 60_000);
    expect(refreshDelay(now + 8 * HOUR, now)).toBe(8 * HOUR - 5 * 60_000);
    expect(refreshDelay(now + 5 * 60_000, now)).toBe(0);
    expect(refreshDelay(now - 1, now)).toBe(0);
  });

  it("needs a refresh with no token or inside the window", () => {
    const now = 1_000_000;
    expect(needsRefresh(null, now)).toBe(true);
    expect(needsRefresh({ token: "t", expiresAt: now + 4 * 60_000 }, now)).toBe(true);
    expect(needsRefresh({ token: "t", expiresAt: now + 6 * 60_000 }, now)).toBe(false);
  });
});

describe("ensureAppToken", () => {
  it("mints once, reuses the token until its window, and keeps it on the device", async () => {
    localStorage.setItem("mobius.token", "owner-token");
    let minted = 0;
    const { calls } = mockFetch({
      "POST /api/auth/app-token": () => ({ status: 200, body: { token: `app-${++minted}`, expires_in: 8 * 3600 } }),
    });
    let now = 1_000_000;
    const clock = { now: () => now };
    const [a, b] = await Promise.all([ensureAppToken(4, clock), ensureAppToken(4, clock)]);
    expect(a?.token).toBe("app-1");
    expect(b?.token).toBe("app-1");
    expect(calls).toHaveLength(1);
    expect(JSON.parse(calls[0]?.init.body as string)).toEqual({ app_id: 4 });
    // The owner's token is only ever used to mint.
    expect((calls[0]?.init.headers as Record<string, string>).Authorization).toBe("Bearer owner-token");
    expect(a?.expiresAt).toBe(now + 8 * HOUR);

    now += 8 * HOUR - 4 * 60_000;
    expect((await ensureAppToken(4, clock))?.token).toBe("app-2");
    const kept = JSON.parse(localStorage.getItem(APP_TOKENS_KEY) ?? "{}") as Record<string, { token: string }>;
    expect(kept["4"]?.token).toBe("app-2");
  });

  it("offline, falls back to the token kept on the device", async () => {
    localStorage.setItem(APP_TOKENS_KEY, JSON.stringify({ "9": { token: "kept", expiresAt: 1 } }));
    mockFetch({ "POST /api/auth/app-token": "network-error" });
    expect(heldToken(9)?.token).toBe("kept");
    expect((await ensureAppToken(9))?.token).toBe("kept");
    expect(await ensureAppToken(10)).toBeNull();
  });

  it("other failures are errors", async () => {
    mockFetch({ "POST /api/auth/app-token": { status: 404, body: { code: "app_not_found", message: "No such app." } } });
    await expect(ensureAppToken(11)).rejects.toMatchObject({ code: "app_not_found" });
  });
});
