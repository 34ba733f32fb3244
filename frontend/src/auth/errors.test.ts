import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { describeAuthFailure } from "./errors";

describe("describeAuthFailure", () => {
  it("says how long to wait after too many attempts", () => {
    const error = new ApiError(429, "too_many_attempts", "Slow down.", 17);
    expect(describeAuthFailure(error, "login").message).toBe("Too many attempts — try again in 17 s.");
    expect(describeAuthFailure(new ApiError(429, "too_many_attempts", "x"), "setup").message).toMatch(/shortly/);
  });

  it("calls a login 401 a wrong username or password", () => {
    expect(describeAuthFailure(new ApiError(401, "invalid_credentials", "x"), "login").message).toBe(
      "Incorrect username or password.",
    );
  });

  it("shows other server errors as the server worded them, never as a bad password", () => {
    const error = new ApiError(500, "internal", "The database is unavailable.");
    expect(describeAuthFailure(error, "login").message).toBe("The database is unavailable.");
  });

  it("ties setup errors to their field", () => {
    expect(describeAuthFailure(new ApiError(400, "weak_password", "Too short."), "setup")).toEqual({
      message: "Too short.",
      field: "password",
    });
    expect(describeAuthFailure(new ApiError(400, "invalid_username", "Bad."), "setup").field).toBe("username");
  });

  it("offers sign-in when the server already has an owner", () => {
    expect(describeAuthFailure(new ApiError(409, "already_configured", "x"), "setup").alreadyConfigured).toBe(true);
  });

  it("explains a network failure", () => {
    expect(describeAuthFailure(new ApiError(0, "network", "x"), "login").message).toMatch(/Couldn't reach Möbius/);
  });
});
