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
  --log F                     append every request (method, path, headers, body) as JSON lines

GET /_mock/requests returns the log (the test reads what reached the server).
"""

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOG = []
LOCK = threading.Lock()
SESSIONS = set()

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

    def authorised(self):
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

    def do_GET(self):
        if self.path.startswith("/_mock/requests"):
            with LOCK:
                self.send_json(200, {"requests": LOG})
            return
        record(self, None)
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
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        record(self, message if message is not None else raw)
        if not self.authorised():
            self.send_json(401, {"error": "unauthorized"}, {"WWW-Authenticate": "Bearer"})
            return
        if not isinstance(message, dict):
            self.send_json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            return
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
