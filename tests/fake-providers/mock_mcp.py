#!/usr/bin/env python3
"""A scripted remote MCP server for the connector tests (streamable HTTP, JSON-RPC over POST).

Tools:
  echo {text}        answers "echo: <text>" (annotated read-only)
  save {text}        answers "save: <text>" (not read-only)
  big  {mib}         answers a text result of about <mib> MiB, streamed in chunks
  hang {}            never answers (the broker's time limit ends the call)
  garbage {}         answers bytes that are not JSON-RPC

Options:
  --port N / --port-file F    where it listens (0: any free port, written to F)
  --bearer T                  require `Authorization: Bearer T` (else 401)
  --header NAME=VALUE         require that header instead
  --sse                       answer requests as text/event-stream instead of JSON
  --legacy                    speak only the legacy HTTP+SSE transport (2024-11-05): GET /sse opens
                              an event stream whose first `endpoint` event names
                              /messages?session_id=…; each POST there is answered 202 and its answer
                              sent on the stream (echo/save/tools; POST /sse and /mcp are 405).
                              GET /_mock/streams says how many streams are open
  --oauth                     require an access token this server issued (OAuth 2.1: resource
                              metadata, authorization-server metadata, dynamic client
                              registration, /auth/authorize that consents at once and redirects
                              back, /auth/token with PKCE S256 and rotating refresh tokens)
  --expires-in S              access tokens' lifetime in seconds (default 3600)
  --no-registration           leave registration out of the metadata (a client must be pasted)
  --log F                     append every request (method, path, headers, body) as JSON lines

GET /_mock/requests returns the log (the test reads what reached the server); GET /_mock/oauth
the OAuth counters (exchanges, refreshes, refused) and the tokens now valid. POST /_mock/revoke
forgets every access token (refresh tokens still work); POST /_mock/revoke?deny=1 also refuses
every access token issued from then on (a renewal succeeds, the renewed token is refused).
"""

import argparse
import base64
import hashlib
import json
import queue
import threading
import urllib.parse
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOG = []
LOCK = threading.Lock()
SESSIONS = set()
# OAuth: registered clients (id -> redirect URIs), codes (code -> grant), valid tokens.
CLIENTS = {}
CODES = {}
ACCESS = set()
REFRESH = {}
OAUTH = {"exchanges": 0, "refreshes": 0, "refused": 0, "registrations": 0}
# Set by /_mock/revoke?deny=1: no access token is accepted any more.
DENY = {"all": False}
# Legacy transport: the open streams (session id -> queue of messages to send on it).
STREAMS = {}

TOOLS = [
    {"name": "echo", "description": "Echoes its text.", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "save", "description": "Saves a note (changes something).",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "big", "description": "Answers a large text.",
     "inputSchema": {"type": "object", "properties": {"mib": {"type": "number"}}}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "garbage", "description": "Answers garbage.", "inputSchema": {"type": "object", "properties": {}}},
]


def record(handler, body):
    entry = {
        "method": handler.command,
        "path": handler.path,
        "headers": {k.lower(): v for k, v in handler.headers.items()},
        "body": body,
        "time": time.time(),
    }
    with LOCK:
        LOG.append(entry)
        if ARGS.log:
            with open(ARGS.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def origin(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def authorised(self):
        if ARGS.oauth:
            auth = self.headers.get("Authorization") or ""
            return auth.startswith("Bearer ") and auth[7:] in ACCESS and not DENY["all"]
        if ARGS.bearer:
            return self.headers.get("Authorization") == f"Bearer {ARGS.bearer}"
        if ARGS.header:
            name, value = ARGS.header.split("=", 1)
            return self.headers.get(name) == value
        return True

    def send_json(self, status, payload, extra=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def answer(self, message, extra=None):
        stream = getattr(self, "legacy_stream", None)
        if stream is not None:
            stream.put(message)
            return
        if ARGS.sse:
            data = ("event: message\ndata: " + json.dumps(message) + "\n\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_json(200, message, extra)

    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def oauth_get(self):
        """The OAuth GETs: metadata and the authorize endpoint (which consents at once)."""
        url = urllib.parse.urlsplit(self.path)
        origin = self.origin()
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.send_json(200, {"resource": origin + "/mcp", "authorization_servers": [origin + "/auth"],
                                 "scopes_supported": ["tools"]})
            return True
        if url.path == "/.well-known/oauth-authorization-server/auth":
            meta = {"issuer": origin + "/auth", "authorization_endpoint": origin + "/auth/authorize",
                    "token_endpoint": origin + "/auth/token", "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"]}
            if not ARGS.no_registration:
                meta["registration_endpoint"] = origin + "/auth/register"
            self.send_json(200, meta)
            return True
        if url.path == "/auth/authorize":
            q = dict(urllib.parse.parse_qsl(url.query))
            client, redirect_uri = q.get("client_id"), q.get("redirect_uri", "")
            known = CLIENTS.get(client)
            if (known is None or redirect_uri not in known or q.get("response_type") != "code"
                    or q.get("code_challenge_method") != "S256" or not q.get("code_challenge")
                    or q.get("resource") != origin + "/mcp" or not q.get("state")):
                OAUTH["refused"] += 1
                self.send_json(400, {"error": "invalid_request"})
                return True
            code = uuid.uuid4().hex
            CODES[code] = {"client": client, "redirect_uri": redirect_uri, "challenge": q["code_challenge"]}
            sep = "&" if "?" in redirect_uri else "?"
            self.redirect(redirect_uri + sep + urllib.parse.urlencode({"code": code, "state": q["state"]}))
            return True
        return False

    def issue(self):
        access, refresh = "at-" + uuid.uuid4().hex, "rt-" + uuid.uuid4().hex
        ACCESS.add(access)
        REFRESH[refresh] = access
        self.send_json(200, {"access_token": access, "token_type": "Bearer", "expires_in": ARGS.expires_in,
                             "refresh_token": refresh})

    def oauth_post(self, raw):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/auth/register":
            body = json.loads(raw or "{}")
            client = "client-" + uuid.uuid4().hex[:12]
            CLIENTS[client] = list(body.get("redirect_uris") or [])
            OAUTH["registrations"] += 1
            self.send_json(201, {"client_id": client, "redirect_uris": CLIENTS[client],
                                 "token_endpoint_auth_method": "none"})
            return True
        if url.path == "/auth/token":
            form = dict(urllib.parse.parse_qsl(raw))
            with LOCK:
                if form.get("grant_type") == "authorization_code":
                    grant = CODES.pop(form.get("code", ""), None)
                    verifier = form.get("code_verifier", "")
                    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if (grant is None or grant["client"] != form.get("client_id")
                            or grant["redirect_uri"] != form.get("redirect_uri") or grant["challenge"] != challenge):
                        OAUTH["refused"] += 1
                        self.send_json(400, {"error": "invalid_grant"})
                        return True
                    OAUTH["exchanges"] += 1
                    self.issue()
                    return True
                if form.get("grant_type") == "refresh_token":
                    old = REFRESH.pop(form.get("refresh_token", ""), None)
                    if old is None:
                        OAUTH["refused"] += 1
                        self.send_json(400, {"error": "invalid_grant"})
                        return True
                    ACCESS.discard(old)
                    OAUTH["refreshes"] += 1
                    self.issue()
                    return True
            self.send_json(400, {"error": "unsupported_grant_type"})
            return True
        return False

    def legacy_get(self):
        """GET /sse: the legacy transport's event stream (chunked), until the client leaves."""
        if not self.authorised():
            self.send_json(401, {"error": "unauthorized"}, {"WWW-Authenticate": "Bearer"})
            return
        session = uuid.uuid4().hex
        messages = queue.Queue()
        with LOCK:
            STREAMS[session] = messages
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(text):
            data = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            event(f"event: endpoint\ndata: /messages?session_id={session}\n\n")
            while True:
                try:
                    message = messages.get(timeout=0.5)
                except queue.Empty:
                    event(": keep-alive\n\n")
                    continue
                event("event: message\ndata: " + json.dumps(message) + "\n\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        finally:
            with LOCK:
                STREAMS.pop(session, None)
            self.close_connection = True

    def do_GET(self):
        if self.path.startswith("/_mock/streams"):
            with LOCK:
                self.send_json(200, {"open": len(STREAMS)})
            return
        if self.path.startswith("/_mock/requests"):
            with LOCK:
                self.send_json(200, {"requests": LOG})
            return
        if self.path.startswith("/_mock/oauth"):
            with LOCK:
                self.send_json(200, {**OAUTH, "access": sorted(ACCESS), "refresh": sorted(REFRESH)})
            return
        record(self, None)
        if ARGS.oauth and self.oauth_get():
            return
        if ARGS.legacy and urllib.parse.urlsplit(self.path).path == "/sse":
            self.legacy_get()
            return
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        record(self, None)
        SESSIONS.discard(self.headers.get("Mcp-Session-Id"))
        self.send_response(204)
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        if self.path.startswith("/_mock/revoke"):
            with LOCK:
                ACCESS.clear()
                DENY["all"] = "deny=1" in self.path
            self.send_json(200, {"revoked": True})
            return
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        record(self, message if message is not None else raw)
        if ARGS.oauth and self.oauth_post(raw):
            return
        if not self.authorised():
            challenge = "Bearer"
            if ARGS.oauth:
                challenge = f'Bearer resource_metadata="{self.origin()}/.well-known/oauth-protected-resource/mcp"'
            self.send_json(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
            return
        if not isinstance(message, dict):
            self.send_json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            return
        if ARGS.legacy:
            url = urllib.parse.urlsplit(self.path)
            session = dict(urllib.parse.parse_qsl(url.query)).get("session_id", "")
            with LOCK:
                stream = STREAMS.get(session) if url.path == "/messages" else None
            if url.path != "/messages":
                self.send_json(405, {"error": "this server speaks the HTTP+SSE transport: GET /sse"})
                return
            if stream is None:
                self.send_json(404, {"error": "no such session"})
                return
            if message.get("id") is not None and message.get("method"):
                self.legacy_stream = stream
                self.dispatch(message)
                self.legacy_stream = None
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.dispatch(message)

    def dispatch(self, message):
        """Answers one JSON-RPC message (in the response, or on a legacy stream)."""
        method = message.get("method")
        ident = message.get("id")
        if ident is None:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "initialize":
            session = uuid.uuid4().hex
            SESSIONS.add(session)
            version = (message.get("params") or {}).get("protocolVersion") or "2025-06-18"
            result = {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                      "serverInfo": {"name": "mock-mcp", "version": "1.0"}}
            self.answer({"jsonrpc": "2.0", "id": ident, "result": result}, {"Mcp-Session-Id": session})
            return
        if method == "tools/list":
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
            return
        if method == "ping":
            self.answer({"jsonrpc": "2.0", "id": ident, "result": {}})
            return
        if method == "tools/call":
            params = message.get("params") or {}
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if name in ("echo", "save"):
                text = f"{name}: {arguments.get('text', '')}"
                self.answer({"jsonrpc": "2.0", "id": ident,
                             "result": {"content": [{"type": "text", "text": text}], "isError": False}})
                return
            if name == "big":
                self.stream_big(ident, float(arguments.get("mib", 1)))
                return
            if name == "hang":
                time.sleep(3600)
                return
            if name == "garbage":
                data = b"\x00\xffnot json at all"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.answer({"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": f"no tool {name}"}})
            return
        self.answer({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "method not found"}})

    def stream_big(self, ident, mib):
        """A JSON-RPC answer whose text is `mib` MiB of 'x', sent in 64 KiB chunks (chunked)."""
        total = int(mib * 1024 * 1024)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        head = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(ident)).encode()
        chunk(head)
        block = b"x" * 65536
        left = total
        while left > 0:
            piece = block[: min(left, len(block))]
            chunk(piece)
            left -= len(piece)
        chunk(b'"}],"isError":false}}')
        self.wfile.write(b"0\r\n\r\n")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--bearer")
    parser.add_argument("--header")
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--oauth", action="store_true")
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--no-registration", action="store_true")
    parser.add_argument("--log")
    ARGS = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(str(server.server_address[1]))
        import os
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
