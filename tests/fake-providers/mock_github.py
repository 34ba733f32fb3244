#!/usr/bin/env python3
"""A scripted GitHub for the GitHub connection tests: the API's `GET /api/user` and a
smart-HTTP git server (the real `git http-backend`) that requires HTTP basic auth.

  GET  /api/user                     200 {"login": LOGIN} for `Authorization: Bearer TOKEN`
                                     (or `token TOKEN`), else 401
  *    /<owner>/<name>.git/...       git's smart HTTP over the bare repositories under --root
                                     (`<root>/<owner>/<name>.git`), fetch and push, only with
                                     basic auth whose password is TOKEN (else 401 with
                                     `WWW-Authenticate: Basic`, which makes git ask its helper)
  GET  /_mock/requests               what reached it: method, path, whether auth was sent and
                                     whether it was the token (never the token itself)

Options: --port-file F (it listens on a free loopback port and writes it there), --token T,
--login L, --root DIR.
"""

import argparse
import base64
import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOG = []
LOCK = threading.Lock()
# A request body is at most this large (the tests push a few files).
MAX_BODY = 64 * 1024 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    raise ValueError("body too large")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length)

    def record(self, auth, ok):
        with LOCK:
            LOG.append({"method": self.command, "path": self.path, "auth": auth, "token": ok})

    def handle_any(self):
        path, _, query = self.path.partition("?")
        if path == "/_mock/requests":
            with LOCK:
                body = json.dumps({"requests": LOG}).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        data = self.body()
        auth = self.headers.get("Authorization", "")
        if path == "/api/user":
            scheme, _, given = auth.partition(" ")
            ok = scheme.lower() in ("bearer", "token") and given == ARGS.token
            self.record(bool(auth), ok)
            if not ok:
                return self.reply(401, b'{"message":"Bad credentials"}', [("Content-Type", "application/json")])
            body = json.dumps({"login": ARGS.login, "id": 1, "type": "User"}).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        user, ok = "", False
        if auth.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
                ok = password == ARGS.token
            except ValueError:
                ok = False
        self.record(bool(auth), ok)
        if not ok:
            return self.reply(401, b"authentication required\n", [("WWW-Authenticate", 'Basic realm="GitHub"')])
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": ARGS.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)),
            "REMOTE_USER": user or "git",
            "REMOTE_ADDR": "127.0.0.1",
        }
        for name in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(name):
                env["HTTP_" + name.upper().replace("-", "_")] = self.headers[name]
        done = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True, check=False)
        head, _, body = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, body = done.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode(errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.reply(status, body, headers)

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--login", default="octo")
    parser.add_argument("--root", required=True)
    ARGS = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
