//! Settings › Connectors: the owner's remote MCP servers. Each shows its status, last error and
//! tools, whether every chat or only chosen ones get it, whether its read-only tools run
//! unasked, and Reconnect / Disconnect / Remove. Adding one takes a URL and, when the server
//! needs it, a secret that the server keeps sealed and the agent never sees — or an OAuth
//! sign-in: "Sign in" leaves for the connector's own sign-in page, which sends the browser back
//! here (`?connector=<id>&oauth=connected|failed`); a server that does not register clients
//! takes a pasted client ID.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import {
  addConnector,
  connectorsKey,
  disconnectConnector,
  fetchConnectors,
  pasteConnectorClient,
  refreshConnector,
  removeConnector,
  signOutConnector,
  startConnectorSignIn,
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
  needs_auth: "Sign in to connect",
};

/** What the connector's sign-in said when it sent the browser back here, once. */
function signInOutcome(): { id: number; ok: boolean } | null {
  const query = new URLSearchParams(location.search);
  const id = Number(query.get("connector"));
  const outcome = query.get("oauth");
  if (!Number.isInteger(id) || id <= 0 || (outcome !== "connected" && outcome !== "failed")) return null;
  history.replaceState(history.state, "", location.pathname);
  return { id, ok: outcome === "connected" };
}

export function ConnectorsSection() {
  const list = useQuery({ queryKey: connectorsKey, queryFn: fetchConnectors, retry: false });
  const connectors = list.data?.connectors ?? [];
  const full = list.data !== undefined && connectors.length >= list.data.max;
  const [outcome] = useState(signInOutcome);
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
      {outcome && (
        <p className={outcome.ok ? "settings-note" : "settings-error"} role="status">
          {outcome.ok
            ? `Signed in: ${connectors.find((c) => c.id === outcome.id)?.name ?? "the connector"} is connected.`
            : "The sign-in did not complete; see the connector below."}
        </p>
      )}
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
  const signIn = useMutation({
    mutationFn: () => startConnectorSignIn(connector.id),
    onSuccess: ({ authorization_url }) => location.assign(authorization_url),
  });
  const signOut = useMutation({ mutationFn: () => signOutConnector(connector.id), onSuccess: changed });
  const oauth = connector.auth === "oauth";
  const update = useMutation({ mutationFn: (body: Parameters<typeof updateConnector>[1]) => updateConnector(connector.id, body), onSuccess: changed });
  const chatsId = useId();
  const autoId = useId();
  const failed = refresh.error ?? disconnect.error ?? remove.error ?? update.error ?? signIn.error ?? signOut.error;
  return (
    <li className="connector-row" data-connector={connector.name} data-status={connector.status}>
      <div className="connector-head">
        <span className="connector-name">{connector.name}</span>
        <span className="connector-status" data-status={connector.status}>
          {STATUS_TEXT[connector.status]}
        </span>
      </div>
      <span className="connector-url">
        {connector.url}
        {connector.transport === "sse" ? " · legacy SSE" : ""}
      </span>
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
      {oauth && connector.status === "needs_auth" && <PasteClient connector={connector} onDone={changed} />}
      <div className="connector-actions">
        {oauth && connector.status === "needs_auth" ? (
          <button type="button" className="btn btn-primary btn-small" onClick={() => signIn.mutate()} disabled={signIn.isPending}>
            {signIn.isPending ? "Opening the sign-in…" : "Sign in"}
          </button>
        ) : (
          <button type="button" className="btn btn-secondary btn-small" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
            {refresh.isPending ? "Connecting…" : "Reconnect"}
          </button>
        )}
        {oauth && connector.status !== "needs_auth" && (
          <button type="button" className="btn btn-ghost btn-small" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out
          </button>
        )}
        {!oauth && connector.status !== "disconnected" && (
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

/** A client ID (and secret) the owner registered at the connector's server, for servers that do not register clients. */
function PasteClient({ connector, onDone }: { connector: Connector; onDone: () => void }) {
  const [clientId, setClientId] = useState("");
  const [clientSecret, setClientSecret] = useState("");
  const paste = useMutation({
    mutationFn: () => pasteConnectorClient(connector.id, { client_id: clientId.trim(), ...(clientSecret ? { client_secret: clientSecret } : {}) }),
    onSuccess: () => {
      setClientId("");
      setClientSecret("");
      onDone();
    },
  });
  const ids = { id: useId(), secret: useId() };
  return (
    <details className="connector-client">
      <summary>Use your own OAuth client</summary>
      <form
        className="setting-stack"
        onSubmit={(e) => {
          e.preventDefault();
          paste.mutate();
        }}
        aria-label={`OAuth client for ${connector.name}`}
      >
        <label htmlFor={ids.id} className="field-label">
          Client ID
        </label>
        <input id={ids.id} className="field-input" value={clientId} onChange={(e) => setClientId(e.target.value)} required autoComplete="off" />
        <label htmlFor={ids.secret} className="field-label">
          Client secret (if it has one)
        </label>
        <input id={ids.secret} className="field-input" type="password" value={clientSecret} onChange={(e) => setClientSecret(e.target.value)} autoComplete="off" />
        {paste.isError && (
          <p className="settings-error" role="alert">
            {errorText(paste.error)}
          </p>
        )}
        <div>
          <button type="submit" className="btn btn-secondary btn-small" disabled={paste.isPending}>
            Save client
          </button>
        </div>
      </form>
    </details>
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
    if (form.auth === "bearer" || form.auth === "header") body.secret = secret;
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
        <option value="oauth">Sign in (OAuth)</option>
      </select>
      {form.auth === "header" && (
        <>
          <label htmlFor={ids.header} className="field-label">
            Header
          </label>
          <input id={ids.header} className="field-input" value={headerName} onChange={(e) => setHeaderName(e.target.value)} placeholder="X-Api-Key" required />
        </>
      )}
      {(form.auth === "bearer" || form.auth === "header") && (
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
      {add.data && add.data.status === "needs_auth" && (
        <p className="settings-note" role="status">
          Added {add.data.name}: sign in to it below.
        </p>
      )}
      {add.data && add.data.status !== "connected" && add.data.status !== "needs_auth" && (
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
