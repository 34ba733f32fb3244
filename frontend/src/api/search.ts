//! Chat search (`GET /api/chats/search`): the typed call, the snippet's marks, and grouping
//! hits by chat for the drawer.

import { apiFetch } from "./client";

/** Longest query the server accepts, in characters. */
export const MAX_QUERY_CHARS = 256;
/** Marks the server puts around each match in a snippet. */
const MATCH_START = "\u0002";
const MATCH_END = "\u0003";

export interface SearchHit {
  chat_id: string;
  title: string;
  /** The message's index in the transcript; null when the title matched. */
  message_idx: number | null;
  ts: number;
  /** Plain text with each match between U+0002 and U+0003. */
  snippet: string;
}

export interface SearchPage {
  hits: SearchHit[];
  next_cursor: string | null;
  /** Messages of a recent import are still entering the index: some may not be found yet. */
  indexing?: boolean;
}

export function searchChats(q: string, options: { cursor?: string; limit?: number; signal?: AbortSignal } = {}): Promise<SearchPage> {
  const params = new URLSearchParams({ q });
  if (options.limit !== undefined) params.set("limit", String(options.limit));
  if (options.cursor !== undefined) params.set("cursor", options.cursor);
  return apiFetch<SearchPage>(`/api/chats/search?${params.toString()}`, options.signal ? { signal: options.signal } : {});
}

/** One run of a snippet: plain text, or a match. */
export interface SnippetPart {
  text: string;
  match: boolean;
}

/** Splits a snippet at its marks; stray marks are dropped, never shown. */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let match = false;
  let text = "";
  const flush = () => {
    if (text) parts.push({ text, match });
    text = "";
  };
  for (const ch of snippet) {
    if (ch === MATCH_START || ch === MATCH_END) {
      flush();
      match = ch === MATCH_START;
    } else text += ch;
  }
  flush();
  return parts;
}

/** Hits of one chat, in the order the server ranked them. */
export interface SearchGroup {
  chatId: string;
  title: string;
  hits: SearchHit[];
}

/** Groups hits by chat; a chat's place is that of its best (first) hit. */
export function groupHits(hits: SearchHit[]): SearchGroup[] {
  const groups = new Map<string, SearchGroup>();
  for (const hit of hits) {
    let group = groups.get(hit.chat_id);
    if (!group) {
      group = { chatId: hit.chat_id, title: hit.title, hits: [] };
      groups.set(hit.chat_id, group);
    }
    group.hits.push(hit);
  }
  return [...groups.values()];
}
