//! Settings › Connectors: the owner's remote MCP servers. Each shows its status, last error and
//! tools, whether every chat or only chosen ones get it, whether its read-only tools run
//! unasked, and Reconnect / Disconnect / Remove. Adding one takes a URL and, when the server
//! needs it, a secret that the server keeps sealed and the agent never sees.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import {
  addConnector,
  connectorsKey,
  disconnectConnector,
  fetchConnectors,
  refreshConnector,
  removeConnector,
  updateConnector,
  type Connector,
  type NewConnector,
} from "../../api/connectors";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

const STATUS_TEXT: Record<Connector["status"], string> = {
  pending: "Connecting…",
  connected: "Connected",
  error: "Could not connect",
  disconnected: "Disconnected",
};

export function ConnectorsSection() {
  const list = useQuery({ queryKey: connectorsKey, queryFn: fetchConnectors, retry: false });
  const connectors = list.data?.connectors ?? [];
  const full = list.data !== undefined && connectors.length >= list.data.max;
  return (
    <section className="settings-section" aria-labelledby="s-connectors">
      <h2 id="s-connectors" className="settings-title">
        Connectors
      </h2>
      <p className="settings-lead">
        Let the agent use your tools — notes, calendars, issue trackers — through their MCP servers. The server holds the keys and passes each
        call on; the agent never sees them.
      </p>
      {list.isError && (
        <p className="settings-error" role="alert">
          Couldn't load connectors: {errorText(list.error)}
        </p>
      )}
      {list.data && connectors.length === 0 && <p className="settings-note">No connectors yet.</p>}
      <ul className="connector-list">
        {connectors.map((c) => (
          <ConnectorRow key={c.id} connector={c} />
        ))}
      </ul>
      {full ? <p className="settings-note">You have {list.data?.max} connectors, the most there can be; remove one to add another.</p> : <AddConnector />}
    </section>
  );
}

function ConnectorRow({ connector }: { connector: Connector }) {
  const queryClient = useQueryClient();
  const changed = () => void queryClient.invalidateQueries({ queryKey: connectorsKey });
  const refresh = useMutation({ mutationFn: () => refreshConnector(connector.id), onSuccess: changed });
  const disconnect = useMutation({ mutationFn: () => disconnectConnector(connector.id), onSuccess: changed });
  const remove = useMutation({ mutationFn: () => removeConnector(connector.id), onSuccess: changed });
  const update = useMutation({ mutationFn: (body: Parameters<typeof updateConnector>[1]) => updateConnector(connector.id, body), onSuccess: changed });
  const chatsId = useId();
  const autoId = useId();
  const failed = refresh.error ?? disconnect.error ?? remove.error ?? update.error;
  return (
    <li className="connector-row" data-connector={connector.name} data-status={connector.status}>
      <div className="connector-head">
        <span className="connector-name">{connector.name}</span>
        <span className="connector-status" data-status={connector.status}>
          {STATUS_TEXT[connector.status]}
        </span>
      </div>
      <span className="connector-url">{connector.url}</span>
      {connector.last_error && <span className="settings-error connector-error">{connector.last_error}</span>}
      {connector.tools.length > 0 && (
        <details className="connector-tools">
          <summary>
            {connector.tools.length} {connector.tools.length === 1 ? "tool" : "tools"}
          </summary>
          <ul>
            {connector.tools.map((t) => (
              <li key={t.name}>
                <code>{t.name}</code>
                {t.read_only ? " · reads only" : ""}
                {t.description ? ` — ${t.description}` : ""}
              </li>
            ))}
          </ul>
        </details>
      )}
      <div className="setting-row">
        <label htmlFor={chatsId}>Chats</label>
        <select
          id={chatsId}
          className="select"
          value={connector.chats}
          disabled={update.isPending}
          onChange={(e) => update.mutate({ chats: e.target.value as Connector["chats"] })}
        >
          <option value="all">Every chat</option>
          <option value="chosen">Chats that choose it</option>
        </select>
      </div>
      <label className="setting-check" htmlFor={autoId}>
        <input
          id={autoId}
          type="checkbox"
          checked={connector.read_only_auto}
          disabled={update.isPending}
          onChange={(e) => update.mutate({ read_only_auto: e.target.checked })}
        />
        Run its read-only tools without asking
      </label>
      <div className="connector-actions">
        <button type="button" className="btn btn-secondary btn-small" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
          {refresh.isPending ? "Connecting…" : "Reconnect"}
        </button>
        {connector.status !== "disconnected" && (
          <button type="button" className="btn btn-ghost btn-small" onClick={() => disconnect.mutate()} disabled={disconnect.isPending}>
            Disconnect
          </button>
        )}
        <button
          type="button"
          className="btn btn-danger-quiet btn-small"
          onClick={() => remove.mutate()}
          disabled={remove.isPending}
          aria-label={`Remove ${connector.name}`}
        >
          Remove
        </button>
      </div>
      {failed && (
        <p className="settings-error" role="alert">
          {errorText(failed)}
        </p>
      )}
    </li>
  );
}

function AddConnector() {
  const queryClient = useQueryClient();
  const [form, setForm] = useState<NewConnector>({ name: "", url: "", auth: "none", chats: "all", read_only_auto: false });
  const [secret, setSecret] = useState("");
  const [headerName, setHeaderName] = useState("");
  const add = useMutation({
    mutationFn: addConnector,
    onSuccess: () => {
      setForm({ name: "", url: "", auth: "none", chats: "all", read_only_auto: false });
      setSecret("");
      setHeaderName("");
      void queryClient.invalidateQueries({ queryKey: connectorsKey });
    },
  });
  const ids = { name: useId(), url: useId(), auth: useId(), secret: useId(), header: useId() };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    const body: NewConnector = { ...form, name: form.name.trim(), url: form.url.trim() };
    if (form.auth !== "none") body.secret = secret;
    if (form.auth === "header") body.header_name = headerName.trim();
    add.mutate(body);
  };
  return (
    <form className="setting-stack connector-add" onSubmit={onSubmit} aria-label="Add a connector">
      <h3 className="settings-subtitle">Add a connector</h3>
      <label htmlFor={ids.name} className="field-label">
        Name
      </label>
      <input
        id={ids.name}
        className="field-input"
        value={form.name}
        onChange={(e) => setForm({ ...form, name: e.target.value.toLowerCase() })}
        placeholder="notes"
        pattern="[a-z0-9][a-z0-9_\-]{0,31}"
        required
        autoComplete="off"
      />
      <label htmlFor={ids.url} className="field-label">
        MCP server URL
      </label>
      <input
        id={ids.url}
        className="field-input"
        type="url"
        value={form.url}
        onChange={(e) => setForm({ ...form, url: e.target.value })}
        placeholder="https://mcp.example.com/mcp"
        required
        autoComplete="off"
      />
      <label htmlFor={ids.auth} className="field-label">
        Sign-in
      </label>
      <select id={ids.auth} className="select" value={form.auth} onChange={(e) => setForm({ ...form, auth: e.target.value as NewConnector["auth"] })}>
        <option value="none">None</option>
        <option value="bearer">Bearer token</option>
        <option value="header">Key in a header</option>
      </select>
      {form.auth === "header" && (
        <>
          <label htmlFor={ids.header} className="field-label">
            Header
          </label>
          <input id={ids.header} className="field-input" value={headerName} onChange={(e) => setHeaderName(e.target.value)} placeholder="X-Api-Key" required />
        </>
      )}
      {form.auth !== "none" && (
        <>
          <label htmlFor={ids.secret} className="field-label">
            {form.auth === "bearer" ? "Token" : "Key"}
          </label>
          <input id={ids.secret} className="field-input" type="password" value={secret} onChange={(e) => setSecret(e.target.value)} required autoComplete="off" />
        </>
      )}
      {add.isError && (
        <p className="settings-error" role="alert">
          {errorText(add.error)}
        </p>
      )}
      {add.data && add.data.status !== "connected" && (
        <p className="settings-error" role="status">
          Added, but {add.data.name} could not connect: {add.data.last_error}
        </p>
      )}
      <div>
        <button type="submit" className="btn btn-primary btn-small" disabled={add.isPending}>
          {add.isPending ? "Connecting…" : "Add"}
        </button>
      </div>
    </form>
  );
}
