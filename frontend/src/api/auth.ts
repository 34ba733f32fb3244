//! Typed calls for the auth endpoints and the query keys their results are cached under.

import { apiFetch } from "./client";

/** `GET /api/auth/setup/status`. */
export interface SetupStatus {
  configured: boolean;
  auth_mode: string;
}

/** `GET /api/auth/session`. */
export interface Session {
  username: string;
  scope: string;
  /** Unix seconds. */
  expires_at: number;
}

/** What setup and login return. */
export interface TokenResponse {
  access_token: string;
  token_type: string;
}

/** Username and password, as typed (the server trims the username). */
export interface Credentials {
  username: string;
  password: string;
}

export const setupStatusKey = ["auth", "setup-status"] as const;
export const sessionKey = ["auth", "session"] as const;
/** The session is checked again after this long (the shell's query and the start-up prefetch). */
export const SESSION_STALE_MS = 60_000;

const BOOT_TIMEOUT_MS = 10_000;

export function fetchSetupStatus(signal?: AbortSignal): Promise<SetupStatus> {
  return apiFetch<SetupStatus>("/api/auth/setup/status", { auth: false, timeoutMs: BOOT_TIMEOUT_MS, ...(signal && { signal }) });
}

/** The session of the stored token, or of `token` when given (used right after sign-in). */
export function fetchSession(options: { token?: string; signal?: AbortSignal } = {}): Promise<Session> {
  return apiFetch<Session>("/api/auth/session", {
    auth: options.token ?? true,
    timeoutMs: BOOT_TIMEOUT_MS,
    ...(options.signal && { signal: options.signal }),
  });
}

export function createOwner(credentials: Credentials): Promise<TokenResponse> {
  return apiFetch<TokenResponse>("/api/auth/setup", { method: "POST", body: credentials, auth: false });
}

export function signIn(credentials: Credentials): Promise<TokenResponse> {
  return apiFetch<TokenResponse>("/api/auth/token", { method: "POST", body: credentials, auth: false });
}

/** A new owner password: every other session and device is signed out and the server's signing
 * key rotates; the answer is this browser's new token. */
export function changePassword(body: { current_password: string; new_password: string }): Promise<TokenResponse> {
  return apiFetch<TokenResponse>("/api/auth/password", { method: "POST", body });
}

export function signOutEverywhere(): Promise<{ ok: boolean }> {
  return apiFetch<{ ok: boolean }>("/api/auth/logout-all", { method: "POST" });
}

/** A signed-in device (`GET /api/auth/devices`). */
export interface Device {
  id: number;
  /** Its browser's user agent. */
  label: string;
  /** The address it signed in from. */
  address: string;
  /** Unix milliseconds. */
  signed_in_at: number;
  last_seen_at: number;
  /** This browser. */
  current: boolean;
  /** Stands for every session from before device sessions existed. */
  legacy: boolean;
}

export const devicesKey = ["auth", "devices"] as const;

export const fetchDevices = () => apiFetch<{ devices: Device[] }>("/api/auth/devices");

/** Signs one device out at once. */
export const revokeDevice = (id: number) => apiFetch<void>(`/api/auth/devices/${id}`, { method: "DELETE" });

/** A pairing code for a new device. */
export interface PairingCode {
  code: string;
  /** Unix milliseconds. */
  expires_at: number;
  /** The address a new device opens (what the QR code holds). */
  url: string;
}

export type PairingStatus = { status: "none" } | { status: "pending"; expires_at: number } | { status: "paired"; label: string };

export const createPairing = () => apiFetch<PairingCode>("/api/auth/pairing", { method: "POST", body: {} });
export const fetchPairing = () => apiFetch<PairingStatus>("/api/auth/pairing");
export const cancelPairing = () => apiFetch<void>("/api/auth/pairing", { method: "DELETE" });

/** A new device trades a code for its own session. */
export function pairDevice(code: string): Promise<TokenResponse> {
  return apiFetch<TokenResponse>("/api/auth/pair", { method: "POST", body: { code }, auth: false });
}
