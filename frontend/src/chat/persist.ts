//! What the device remembers per owner and chat: composer drafts and reading positions.
//! Everything here is scoped to the signed-in owner and wiped on sign-out.

import type { UploadedFile } from "../api/uploads";
import type { Anchor } from "./scroll";

const DRAFT_PREFIX = "mobius.draft.";
const ANCHORS_PREFIX = "mobius.anchors.";
const LAST_CHAT_PREFIX = "mobius.last-chat.";
const HINT_PREFIX = "mobius.hint-dismissed.";
/** Reading positions kept, newest first; older chats fall off. */
export const MAX_ANCHORS = 300;
/** A draft longer than this is cut when stored (a paste of a log file must not fill storage). */
export const MAX_DRAFT_CHARS = 100_000;

function read(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // Storage full or refused: the draft lives on in memory for this page.
  }
}

export function loadDraft(owner: string, chatId: string): string {
  return read(`${DRAFT_PREFIX}${owner}.${chatId}`) ?? "";
}

export function saveDraft(owner: string, chatId: string, text: string): void {
  write(`${DRAFT_PREFIX}${owner}.${chatId}`, text === "" ? null : text.slice(0, MAX_DRAFT_CHARS));
}

/** Uploaded files a chat's draft carries (the server's rows), kept across reloads. */
export function loadDraftFiles(owner: string, chatId: string): UploadedFile[] {
  try {
    const parsed: unknown = JSON.parse(read(`${DRAFT_PREFIX}${owner}.${chatId}.files`) ?? "[]");
    return Array.isArray(parsed) ? (parsed as UploadedFile[]).filter((f) => typeof f?.name === "string" && typeof f?.url === "string") : [];
  } catch {
    return [];
  }
}

export function saveDraftFiles(owner: string, chatId: string, files: readonly UploadedFile[]): void {
  write(`${DRAFT_PREFIX}${owner}.${chatId}.files`, files.length === 0 ? null : JSON.stringify(files));
}

type AnchorMap = Record<string, Anchor & { at: number }>;

function loadAnchors(owner: string): AnchorMap {
  try {
    const parsed: unknown = JSON.parse(read(`${ANCHORS_PREFIX}${owner}`) ?? "{}");
    return typeof parsed === "object" && parsed !== null ? (parsed as AnchorMap) : {};
  } catch {
    return {};
  }
}

export function loadAnchor(owner: string, chatId: string): Anchor | null {
  const entry = loadAnchors(owner)[chatId];
  return entry && typeof entry.key === "string" && typeof entry.offset === "number" ? { key: entry.key, offset: entry.offset } : null;
}

export function saveAnchor(owner: string, chatId: string, anchor: Anchor | null, now: number = Date.now()): void {
  const map = loadAnchors(owner);
  if (anchor === null) delete map[chatId];
  else map[chatId] = { ...anchor, at: now };
  const kept = Object.entries(map)
    .sort((a, b) => b[1].at - a[1].at)
    .slice(0, MAX_ANCHORS);
  write(`${ANCHORS_PREFIX}${owner}`, JSON.stringify(Object.fromEntries(kept)));
}

export function loadLastChat(owner: string): string | null {
  return read(`${LAST_CHAT_PREFIX}${owner}`);
}

export function saveLastChat(owner: string, chatId: string | null): void {
  write(`${LAST_CHAT_PREFIX}${owner}`, chatId);
}

export function isHintDismissed(owner: string): boolean {
  return read(`${HINT_PREFIX}${owner}`) === "1";
}

export function dismissHint(owner: string): void {
  write(`${HINT_PREFIX}${owner}`, "1");
}

/** Forgets every owner-scoped key (sign-out). Device preferences such as the theme stay. */
export function wipeOwnerData(): void {
  try {
    const doomed: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && [DRAFT_PREFIX, ANCHORS_PREFIX, LAST_CHAT_PREFIX, HINT_PREFIX].some((p) => key.startsWith(p))) doomed.push(key);
    }
    for (const key of doomed) localStorage.removeItem(key);
  } catch {
    // Nothing stored.
  }
}
