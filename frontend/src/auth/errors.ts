//! Turns a failed setup or sign-in call into the sentence the form shows, and the field it
//! belongs to when there is one.

import { ApiError } from "../api/client";

export type AuthForm = "setup" | "login";

/** What the form displays for a failed submit. */
export interface AuthFailure {
  message: string;
  field?: "username" | "password";
  /** The server already has an owner: setup should offer the sign-in form. */
  alreadyConfigured?: boolean;
}

export function describeAuthFailure(error: unknown, form: AuthForm): AuthFailure {
  if (!(error instanceof ApiError)) return { message: "Something went wrong. Try again." };
  if (error.code === "timeout") return { message: "Möbius took too long to answer. Try again." };
  if (error.isNetwork) return { message: "Couldn't reach Möbius. Check your connection and try again." };
  if (error.status === 429) {
    const wait = error.retryAfterSeconds;
    return { message: wait === null ? "Too many attempts — try again shortly." : `Too many attempts — try again in ${wait} s.` };
  }
  if (form === "login" && error.status === 401) return { message: "Incorrect username or password." };
  if (form === "setup") {
    if (error.code === "already_configured") {
      return { message: "This server already has an owner account. Sign in instead.", alreadyConfigured: true };
    }
    if (error.code === "invalid_username") return { message: error.message, field: "username" };
    if (error.code === "weak_password" || error.code === "invalid_password") {
      return { message: error.message, field: "password" };
    }
  }
  return { message: error.message };
}
