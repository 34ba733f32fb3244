//! Connectors (`/api/connectors`): remote MCP servers the agent reaches through the server's
//! broker. The owner adds one by URL (no auth, or a bearer/header secret that is never read
//! back); the server lists its tools at connect.

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
  auth: "none" | "bearer" | "header";
  header_name: string | null;
  has_secret: boolean;
  /** Every chat, or only the chats that chose it in their info sheet. */
  chats: "all" | "chosen";
  /** Its read-only tools run without asking. */
  read_only_auto: boolean;
  status: "pending" | "connected" | "error" | "disconnected";
  last_error: string | null;
  tools: ConnectorTool[];
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
