//! Server-sent events over `fetch` (EventSource can't send the bearer header): a line parser
//! that survives arbitrary chunk boundaries, and one connection attempt that feeds it.

import { requestHeaders } from "../api/client";
import { noteResponse } from "../shell/online";

/** One dispatched event: its `id:` (when the server numbered it) and its `data:` text. */
export interface SseMessage {
  id: string | null;
  event: string | null;
  data: string;
}

/** Incremental SSE parser: push decoded text, get the complete events it finished. */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private id: string | null = null;
  private event: string | null = null;
  /** The time of the last line read, comments (keepalives) included. */
  lastReadAt = 0;

  push(chunk: string, now: number = Date.now()): SseMessage[] {
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const newline = this.buffer.search(/\r\n|\r|\n/);
      if (newline < 0) break;
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith("\r\n", newline) ? 2 : 1;
      // A lone trailing \r may be the first half of \r\n: wait for the next chunk.
      if (this.buffer[newline] === "\r" && width === 1 && newline === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(newline + width);
      this.lastReadAt = now;
      this.line(line, out);
    }
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === "") {
      if (this.data.length > 0) out.push({ id: this.id, event: this.event, data: this.data.join("\n") });
      this.data = [];
      this.id = null;
      this.event = null;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
    else if (field === "event") this.event = value;
  }
}

/** How one connection ended. */
export type StreamEnd =
  | { kind: "eof" }
  | { kind: "aborted" }
  | { kind: "http"; status: number }
  | { kind: "network" };

export interface StreamOptions {
  url: string;
  token: string | null;
  lastEventId: string | null;
  signal: AbortSignal;
  onOpen?: () => void;
  onMessage: (message: SseMessage) => void;
  /** Called for every chunk, keepalives included (liveness). */
  onRead?: (now: number) => void;
}

/** Runs one connection until it ends; never throws. */
export async function runStream({ url, token, lastEventId, signal, onOpen, onMessage, onRead }: StreamOptions): Promise<StreamEnd> {
  const headers: Record<string, string> = { ...requestHeaders(), Accept: "text/event-stream" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
  let response: Response;
  try {
    response = await fetch(url, { headers, signal, cache: "no-store", credentials: "same-origin" });
  } catch {
    return signal.aborted ? { kind: "aborted" } : { kind: "network" };
  }
  noteResponse(response.status);
  if (response.status !== 200 || !response.body) {
    void response.body?.cancel().catch(() => undefined);
    return { kind: "http", status: response.status };
  }
  onOpen?.();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { kind: "eof" };
      const now = Date.now();
      onRead?.(now);
      for (const message of parser.push(value, now)) onMessage(message);
    }
  } catch {
    return signal.aborted ? { kind: "aborted" } : { kind: "network" };
  } finally {
    reader.releaseLock();
  }
}
