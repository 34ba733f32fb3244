//! Connectors (`/api/connectors`): remote MCP servers the agent reaches through the server's
//! broker. The owner adds one by URL (no auth, a bearer/header secret that is never read back,
//! or OAuth: the owner signs in at the connector's server and comes back to Settings); the
//! server lists its tools at connect.

import { apiFetch } from "./client";

export interface ConnectorTool {
  name: string;
  description: string;
  /** The server marks it as only reading. */
  read_only: boolean;
}

export interface Connector {
  id: number;
  name: string;
  url: string;
  auth: "none" | "bearer" | "header" | "oauth";
  header_name: string | null;
  has_secret: boolean;
  /** Every chat, or only the chats that chose it in their info sheet. */
  chats: "all" | "chosen";
  /** Its read-only tools run without asking. */
  read_only_auto: boolean;
  /** `needs_auth`: an OAuth connector waiting for the owner to sign in. */
  status: "pending" | "connected" | "error" | "disconnected" | "needs_auth";
  last_error: string | null;
  tools: ConnectorTool[];
  /** How the server is spoken to, found at connect: `sse` is the legacy HTTP+SSE transport. */
  transport: "streamable" | "sse";
  created_at: number;
  updated_at: number;
}

export interface NewConnector {
  name: string;
  url: string;
  auth: Connector["auth"];
  secret?: string;
  header_name?: string;
  chats: Connector["chats"];
  read_only_auto: boolean;
}

export const connectorsKey = ["connectors"] as const;

export const fetchConnectors = () => apiFetch<{ connectors: Connector[]; max: number }>("/api/connectors");

export const addConnector = (body: NewConnector) => apiFetch<Connector>("/api/connectors", { method: "POST", body, timeoutMs: 60_000 });

export const updateConnector = (id: number, body: Partial<Pick<Connector, "chats" | "read_only_auto">>) =>
  apiFetch<Connector>(`/api/connectors/${id}`, { method: "PATCH", body });

export const refreshConnector = (id: number) => apiFetch<Connector>(`/api/connectors/${id}/refresh`, { method: "POST", body: {}, timeoutMs: 60_000 });

export const disconnectConnector = (id: number) => apiFetch<Connector>(`/api/connectors/${id}/disconnect`, { method: "POST", body: {} });

/** Starts an OAuth sign-in: the URL the owner's browser opens (it comes back to Settings). */
export const startConnectorSignIn = (id: number) =>
  apiFetch<{ authorization_url: string }>(`/api/connectors/${id}/oauth/start`, { method: "POST", body: {}, timeoutMs: 60_000 });

/** A client the owner registered at the connector's server (when it does not register one itself). */
export const pasteConnectorClient = (id: number, body: { client_id: string; client_secret?: string }) =>
  apiFetch<Connector>(`/api/connectors/${id}/oauth/client`, { method: "POST", body });

/** Signs out of an OAuth connector (its tokens are forgotten). */
export const signOutConnector = (id: number) => apiFetch<Connector>(`/api/connectors/${id}/oauth/disconnect`, { method: "POST", body: {} });

export const removeConnector = (id: number) => apiFetch<void>(`/api/connectors/${id}`, { method: "DELETE" });

/** A chat's choice: the connectors it chose, and those its next turn gets. */
export interface ChatConnectors {
  chosen: number[];
  usable: number[];
}

export const chatConnectorsKey = (chat: string) => ["chat-connectors", chat] as const;

export const fetchChatConnectors = (chat: string) => apiFetch<ChatConnectors>(`/api/chats/${encodeURIComponent(chat)}/connectors`);

export const chooseChatConnectors = (chat: string, ids: number[]) =>
  apiFetch<ChatConnectors>(`/api/chats/${encodeURIComponent(chat)}/connectors`, { method: "PUT", body: { ids } });
