import { describe, expect, it } from "vitest";
import { firstInvalid, validateLogin, validateSetup } from "./validation";

const valid = { username: "ada", password: "correct horse", confirm: "correct horse" };

describe("validateSetup", () => {
  it("accepts a complete form", () => {
    expect(validateSetup(valid)).toEqual({});
  });

  it("requires a username that is not just spaces", () => {
    expect(validateSetup({ ...valid, username: "   " }).username).toBe("Enter a username.");
  });

  it("allows 64 characters and refuses 65, counting code points", () => {
    expect(validateSetup({ ...valid, username: "a".repeat(64) }).username).toBeUndefined();
    expect(validateSetup({ ...valid, username: "a".repeat(65) }).username).toMatch(/64 characters or fewer/);
    // 64 emoji are 128 UTF-16 units but 64 characters.
    expect(validateSetup({ ...valid, username: "🙂".repeat(64) }).username).toBeUndefined();
  });

  it("refuses control characters in the username", () => {
    expect(validateSetup({ ...valid, username: "ad\u0007a" }).username).toMatch(/control characters/);
  });

  it("needs a password of at least 8 characters", () => {
    const errors = validateSetup({ ...valid, password: "1234567", confirm: "1234567" });
    expect(errors.password).toBe("Use at least 8 characters.");
    expect(validateSetup({ ...valid, password: "12345678", confirm: "12345678" }).password).toBeUndefined();
  });

  it("needs the confirmation to match", () => {
    expect(validateSetup({ ...valid, confirm: "correct horsE" }).confirm).toBe("Passwords don't match.");
    expect(validateSetup({ ...valid, confirm: "" }).confirm).toBe("Enter the password again.");
  });
});

describe("validateLogin", () => {
  it("requires both fields", () => {
    expect(validateLogin({ username: " ", password: "" })).toEqual({
      username: "Enter your username.",
      password: "Enter your password.",
    });
    expect(validateLogin({ username: "ada", password: "x" })).toEqual({});
  });
});

describe("firstInvalid", () => {
  it("follows the form's order", () => {
    expect(firstInvalid(["username", "password", "confirm"], { confirm: "x", password: "y" })).toBe("password");
    expect(firstInvalid(["username", "password"], {})).toBeUndefined();
  });
});
