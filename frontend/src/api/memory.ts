//! Memory: a chat's note (`/api/chats/{id}/note`), the memory new chats start with
//! (`/api/memory`, the owner's memory file), and the skills index (`/api/skills`).

import { apiFetch } from "./client";

export interface ChatNote {
  digest: string;
  summary: string;
  /** Transcript messages the note covers. */
  source_count: number;
  /** Last written by the owner rather than by the agent's note turn. */
  by_owner: boolean;
  updated_at: number;
}

export interface NoteAnswer {
  note: ChatNote | null;
  max_digest_chars: number;
  max_summary_chars: number;
}

export interface MemoryState {
  /** New chats start with recent digests and the owner's memory file. */
  enabled: boolean;
  owner_md: string;
  /** The file is longer than `max_bytes`: `owner_md` is its beginning. */
  truncated: boolean;
  max_bytes: number;
}

export interface SkillInfo {
  name: string;
  description: string;
  origin: "built_in" | "agent";
  path: string;
  last_used: number | null;
  error: string | null;
}

export interface SkillsAnswer {
  skills: SkillInfo[];
  left_out: number;
  agent_dir: string;
}

export const noteKey = (chatId: string) => ["note", chatId] as const;
export const memoryKey = ["memory"] as const;
export const skillsKey = ["skills"] as const;

export const fetchNote = (chatId: string) => apiFetch<NoteAnswer>(`/api/chats/${encodeURIComponent(chatId)}/note`);

export const saveNote = (chatId: string, note: { digest: string; summary: string }) =>
  apiFetch<NoteAnswer>(`/api/chats/${encodeURIComponent(chatId)}/note`, { method: "PUT", body: note });

export const fetchMemory = () => apiFetch<MemoryState>("/api/memory");

export const setMemoryEnabled = (enabled: boolean) => apiFetch<MemoryState>("/api/memory", { method: "PATCH", body: { enabled } });

export const saveOwnerMemory = (content: string) => apiFetch<MemoryState>("/api/memory/owner", { method: "PUT", body: { content } });

export const fetchSkills = () => apiFetch<SkillsAnswer>("/api/skills");

/** UTF-8 length of `text`, as the server counts the memory file. */
export const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;
