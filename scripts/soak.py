#!/usr/bin/env python3
"""Attacks a release server the way the internet would and prints what it held, how fast
/api/health answered meanwhile, and its memory before, during and after. Not part of
scripts/test (it takes about five minutes and wants the machine to itself).

Method: the server runs with `ulimit -n 4096` (RLIMIT_NOFILE), pinned to CPU 0; the attackers
and the probe run on CPU 1. Attack connections come from 127.0.0.2-127.0.0.201 (any 127/8
address reaches a loopback server), the probe from 127.0.0.1 on a new connection each time.

  slowloris   5,000 connections (25 per address) each send a request head one header line at
              a time, 2 s apart, and reconnect 1 s after the server closes them; 30 s.
  missing     10,000 `GET /api/chats/<random>/stream` (chats that do not exist), keep-alive.
  streams     10,000 attempts to open a chat's event stream (50 per address), held 10 s, then
              all closed.
  logins      200 addresses guess the owner's password (the right username), one attempt after
              another each, for 30 s; meanwhile the owner's phone (a device that signed in
              before, with its device credential) signs in every 500 ms from 127.0.0.1, and a
              new browser (no credential) tries every 2 s from 127.0.0.250.
  slowbodies  1,100 connections from 20 addresses (55 each) each start a 1 MB POST and send
              its body one byte every 20 s, reconnecting 1 s after the server closes them; 75 s
              (issue 32: this held all 1,024 slots for 71 s).
  widebodies  1,200 uploads from 200 addresses (6 each, within the per-address upload cap),
              each sending 2 KiB/s (above the minimum body rate), for 40 s: every slot an
              unknown client may hold is taken; the owner (a bearer token) must still get in.

During slowbodies and widebodies two probes run from 127.0.0.1 on a new connection every
100 ms: /api/health without credentials (an unknown client) and the owner's
GET /api/chats?limit=20 with the bearer token (a known device).

Figures: connections the attackers held open at the end of the attack (their view), /api/health
latency p50 / p99 / max and failures during the attack, the server's RSS (VmRSS) before, the
highest seen during, and 15 s after; for logins, the attackers' answers and the owner's sign-in
answers and time.

Usage: soak.py BINARY [--only PHASE,...]   (scripts/soak builds it)
"""
import asyncio
import http.client
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, free_port, http_get, http_json, owner_token  # noqa: E402
SERVER_FD_LIMIT = 4096
# The owner bench.owner_token sets up.
OWNER = ("owner", "bench-password-1")
ATTACK_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 202)]


class Server:
    def __init__(self, binary, data_dir):
        self.port = free_port()
        env = dict(os.environ)
        env.update({
            "DATA_DIR": data_dir,
            "MOBIUS_BIND": f"127.0.0.1:{self.port}",
            "MOBIUS_LOG": "error",
            "MOBIUS_FRONTEND_DIR": os.path.join(ROOT, "frontend", "dist"),
            "MOBIUS_SKILL_DIR": os.path.join(ROOT, "skill"),
        })

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_FD_LIMIT, SERVER_FD_LIMIT))

        self.proc = subprocess.Popen(["taskset", "-c", "0", binary, "serve"], env=env, preexec_fn=limit,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.time() + 30
        while time.time() < end:
            try:
                if http_get(self.port, "/api/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.01)
        raise SystemExit("the server never became ready")

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---- the probe: /api/health on a new connection every 100 ms ----

class Probe:
    def __init__(self, server, path="/api/health", token=None):
        self.server = server
        self.path, self.token = path, token
        self.latencies, self.failures, self.max_rss = [], 0, 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                status, _ = http_get(self.server.port, self.path, token=self.token, timeout=5.0)
                if status == 200:
                    self.latencies.append((time.perf_counter() - started) * 1000)
                else:
                    self.failures += 1
            except OSError:
                self.failures += 1
            self.max_rss = max(self.max_rss, self.server.rss_mib())
            time.sleep(0.1)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self):
        lat = sorted(self.latencies)
        if not lat:
            return f"no answer at all ({self.failures} failures)"
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (f"p50 {statistics.median(lat):.1f} ms, p99 {p99:.1f} ms, max {lat[-1]:.1f} ms, "
                f"{len(lat)} answered, {self.failures} failed")


# ---- attackers (a separate process on CPU 1) ----

async def slowloris_slot(port, source, stats, until):
    head = [f"GET /api/health HTTP/1.1\r\n", f"Host: 127.0.0.1:{port}\r\n"] + [f"X-Slow-{i}: a\r\n" for i in range(1000)]
    while time.time() < until:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            await asyncio.sleep(1)
            continue
        stats["open"] += 1
        try:
            for line in head:
                if time.time() >= until:
                    break
                writer.write(line.encode())
                await writer.drain()
                try:
                    # A closed connection reads as EOF at once; an open one times out.
                    if await asyncio.wait_for(reader.read(1), timeout=2) == b"":
                        break
                except asyncio.TimeoutError:
                    pass
        except OSError:
            pass
        finally:
            stats["open"] -= 1
            if time.time() < until:
                stats["closed_by_server"] += 1
            writer.close()
        await asyncio.sleep(1)


async def slowloris(port, seconds, result):
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
    stats = {"open": 0, "closed_by_server": 0, "peak": 0}
    until = time.time() + seconds
    tasks = [asyncio.create_task(slowloris_slot(port, src, stats, until))
             for src in ATTACK_ADDRESSES for _ in range(25)]

    async def peak():
        while time.time() < until:
            stats["peak"] = max(stats["peak"], stats["open"])
            await asyncio.sleep(0.2)
        result["held_at_end"] = stats["open"]

    await asyncio.gather(peak(), *tasks)
    result.update(stats)


async def stream_slot(port, token, source, hold, stats):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError:
        stats["refused"] += 1
        return
    writer.write((f"GET /api/chats/soak/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Authorization: Bearer {token}\r\n\r\n").encode())
    try:
        status = (await asyncio.wait_for(reader.readline(), timeout=10)).decode()
        if " 200 " in status:
            stats["open"] += 1
            await asyncio.sleep(hold)
        elif " 503 " in status:
            stats["too_many_streams"] += 1
        elif status == "":
            stats["cut"] += 1
        else:
            stats["other"] += 1
    except (OSError, asyncio.TimeoutError):
        stats["refused"] += 1
    finally:
        writer.close()


async def streams(port, token, hold, result):
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
    stats = {"open": 0, "too_many_streams": 0, "cut": 0, "refused": 0, "other": 0}
    await asyncio.gather(*[stream_slot(port, token, src, hold, stats) for src in ATTACK_ADDRESSES for _ in range(50)])
    result.update(stats)


async def guess_slot(port, source, until, stats):
    body = json.dumps({"username": OWNER[0], "password": "wrong-guess-123"}).encode()
    head = (f"POST /api/auth/token HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    while time.time() < until:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            stats["refused"] = stats.get("refused", 0) + 1
            await asyncio.sleep(0.2)
            continue
        try:
            writer.write(head + body)
            line = (await asyncio.wait_for(reader.readline(), timeout=30)).decode()
            answer = line.split(" ")[1] if line.startswith("HTTP/") else "cut"
        except (OSError, asyncio.TimeoutError):
            answer = "timed out"
        finally:
            writer.close()
        stats[answer] = stats.get(answer, 0) + 1


async def guesses(port, seconds, result):
    until = time.time() + seconds
    stats = {}
    await asyncio.gather(*[guess_slot(port, src, until, stats) for src in ATTACK_ADDRESSES])
    result.update(stats)


async def body_slot(port, source, stats, until, chunk, every):
    """Starts 1 MB POSTs and sends each body `chunk` bytes every `every` seconds, reconnecting
    1 s after the server ends one; records how each ended and how long it was held."""
    head = (f"POST /api/chats HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 1000000\r\n\r\n").encode()
    while time.time() < until:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            stats["connect failed"] = stats.get("connect failed", 0) + 1
            await asyncio.sleep(1)
            continue
        opened = time.time()
        stats["open"] += 1
        answer = "held to the end"
        try:
            writer.write(head)
            await writer.drain()
            line = asyncio.ensure_future(reader.readline())
            while time.time() < until:
                done, _ = await asyncio.wait({line}, timeout=min(every, max(until - time.time(), 0.01)))
                if done:
                    text = line.result().decode(errors="replace")
                    answer = text.split(" ")[1] if text.startswith("HTTP/") else "closed"
                    break
                writer.write(b" " * chunk)
                await writer.drain()
            line.cancel()
        except OSError:
            answer = "reset"
        finally:
            stats["open"] -= 1
            stats["longest"] = max(stats["longest"], time.time() - opened)
            stats["answers"][answer] = stats["answers"].get(answer, 0) + 1
            writer.close()
        if time.time() < until:
            await asyncio.sleep(1)


async def bodies(port, seconds, addresses, per_address, chunk, every, result):
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
    stats = {"open": 0, "peak": 0, "longest": 0.0, "answers": {}, "full_s": 0.0}
    until = time.time() + seconds
    tasks = [asyncio.create_task(body_slot(port, src, stats, until, chunk, every))
             for src in addresses for _ in range(per_address)]

    async def watch():
        while time.time() < until:
            stats["peak"] = max(stats["peak"], stats["open"])
            # Seconds during which the attackers held 1,000 or more connections.
            if stats["open"] >= 1000:
                stats["full_s"] += 0.2
            await asyncio.sleep(0.2)
        result["held_at_end"] = stats["open"]

    await asyncio.gather(watch(), *tasks)
    result.update(stats)


def attacker(kind, args, queue):
    os.sched_setaffinity(0, {1})
    result = {}
    if kind == "slowloris":
        asyncio.run(slowloris(*args, result))
    elif kind == "logins":
        asyncio.run(guesses(*args, result))
    elif kind == "bodies":
        asyncio.run(bodies(*args, result))
    else:
        asyncio.run(streams(*args, result))
    queue.put(result)


def attack(kind, args):
    queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=attacker, args=(kind, args, queue))
    proc.start()
    return proc, queue


# ---- the phases ----

def settle(server, seconds=15):
    time.sleep(seconds)
    return server.rss_mib()


def phase_slowloris(server):
    print("slowloris: 5,000 connections trickling request heads for 30 s", flush=True)
    before = server.rss_mib()
    proc, queue = attack("slowloris", (server.port, 30))
    time.sleep(3)
    with Probe(server) as probe:
        proc.join()
    result = queue.get()
    after = settle(server)
    print(f"  attacker connections held open at the end: {result.get('held_at_end')} "
          f"(peak {result.get('peak')}), closed by the server: {result.get('closed_by_server')}")
    print(f"  /api/health during the attack: {probe.summary()}")
    print(f"  RSS before {before:.1f} MiB, highest during {probe.max_rss:.1f} MiB, 15 s after {after:.1f} MiB; "
          f"open fds after {server.fds()}")


def phase_missing(server, token):
    print("missing: 10,000 streams of chats that do not exist", flush=True)
    before = server.rss_mib()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    statuses = {}
    for _ in range(10_000):
        conn.request("GET", f"/api/chats/{uuid.uuid4()}/stream", headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
        r.read()
        statuses[r.status] = statuses.get(r.status, 0) + 1
    conn.close()
    during = server.rss_mib()
    after = settle(server)
    print(f"  answers: {statuses}")
    print(f"  RSS before {before:.1f} MiB, after the requests {during:.1f} MiB, 15 s after {after:.1f} MiB")


def phase_streams(server, token):
    print("streams: 10,000 attempts to open a chat's event stream, held 10 s", flush=True)
    http_json(server.port, "POST", "/api/chats", {"id": "soak", "title": "soak"}, token)
    before = server.rss_mib()
    proc, queue = attack("streams", (server.port, token, 10))
    with Probe(server) as probe:
        proc.join()
    result = queue.get()
    after = settle(server)
    print(f"  streams opened {result.get('open')}, 503 too_many_streams {result.get('too_many_streams')}, "
          f"closed unanswered at the connection cap {result.get('cut')}, refused or timed out "
          f"{result.get('refused')}, other {result.get('other')}")
    print(f"  /api/health meanwhile: {probe.summary()}")
    print(f"  RSS before {before:.1f} MiB, highest during {probe.max_rss:.1f} MiB, 15 s after {after:.1f} MiB")


def sign_in(port, cookie=None, source="127.0.0.1"):
    """POST /api/auth/token with the owner's password; returns (status, ms, device cookie)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    headers = {"Content-Type": "application/json"}
    if cookie:
        headers["Cookie"] = cookie
    started = time.perf_counter()
    conn.request("POST", "/api/auth/token", body=json.dumps({"username": OWNER[0], "password": OWNER[1]}),
                 headers=headers)
    r = conn.getresponse()
    r.read()
    ms = (time.perf_counter() - started) * 1000
    set_cookie = (r.getheader("Set-Cookie") or "").split(";")[0]
    conn.close()
    return r.status, ms, set_cookie


def phase_logins(server):
    print("logins: 200 addresses guess the owner's password for 30 s; the owner's phone signs in meanwhile",
          flush=True)
    status, _, cookie = sign_in(server.port)
    assert status == 200 and cookie.startswith("mobius_device="), (status, cookie)
    before = server.rss_mib()
    proc, queue = attack("logins", (server.port, 30))
    time.sleep(3)
    phone, stranger, max_rss = [], {}, 0.0
    next_stranger = time.time()
    while proc.is_alive():
        status, ms, _ = sign_in(server.port, cookie)
        phone.append((status, ms))
        if time.time() >= next_stranger:
            status, _, _ = sign_in(server.port, source="127.0.0.250")
            stranger[status] = stranger.get(status, 0) + 1
            next_stranger = time.time() + 2
        max_rss = max(max_rss, server.rss_mib())
        time.sleep(0.5)
    proc.join()
    result = queue.get()
    after = settle(server)
    ok = sorted(ms for status, ms in phone if status == 200)
    refused = len(phone) - len(ok)
    print(f"  attackers' answers: {dict(sorted(result.items()))}")
    if ok:
        p99 = ok[min(len(ok) - 1, int(len(ok) * 0.99))]
        print(f"  the owner's phone (device credential): {len(ok)} of {len(phone)} sign-ins answered 200 "
              f"(p50 {statistics.median(ok):.0f} ms, p99 {p99:.0f} ms, max {ok[-1]:.0f} ms), {refused} refused")
    else:
        print(f"  the owner's phone (device credential): none of {len(phone)} sign-ins succeeded")
    print(f"  a new browser with the right password (no credential): {dict(sorted(stranger.items()))}")
    print(f"  RSS before {before:.1f} MiB, highest during {max_rss:.1f} MiB, 15 s after {after:.1f} MiB")


def phase_bodies(server, token, title, args):
    print(title, flush=True)
    before = server.rss_mib()
    proc, queue = attack("bodies", (server.port, *args))
    time.sleep(3)
    with Probe(server) as anyone, Probe(server, "/api/chats?limit=20", token) as owner:
        proc.join()
    result = queue.get()
    after = settle(server)
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(result["answers"].items()))
    print(f"  attacker connections open: peak {result['peak']}, at the end {result.get('held_at_end')}; "
          f"1,000 or more open for {result['full_s']:.1f} s; the longest one held {result['longest']:.1f} s")
    print(f"  how the attackers' requests ended: {answers}")
    print(f"  /api/health, no credentials: {anyone.summary()}")
    print(f"  the owner's GET /api/chats?limit=20 (bearer): {owner.summary()}")
    print(f"  RSS before {before:.1f} MiB, highest during {max(anyone.max_rss, owner.max_rss):.1f} MiB, "
          f"15 s after {after:.1f} MiB; open fds after {server.fds()}")


def phase_slowbodies(server, token):
    phase_bodies(server, token, "slowbodies: 1,100 uploads from 20 addresses, one byte every 20 s, for 75 s",
                 (75, ATTACK_ADDRESSES[:20], 55, 1, 20.0))


def phase_widebodies(server, token):
    phase_bodies(server, token, "widebodies: 1,200 uploads from 200 addresses at 2 KiB/s each, for 40 s",
                 (40, ATTACK_ADDRESSES, 6, 2048, 1.0))


PHASES = ("slowloris", "missing", "streams", "logins", "slowbodies", "widebodies")


def main():
    args = sys.argv[1:]
    only = set(PHASES)
    if len(args) == 3 and args[1] == "--only":
        only = set(args[2].split(","))
        args = args[:1]
    if len(args) != 1 or not only <= set(PHASES):
        raise SystemExit(__doc__)
    binary = args[0]
    tmp = tempfile.mkdtemp(prefix="mobius-soak-")
    try:
        server = Server(binary, os.path.join(tmp, "data"))
        try:
            token = owner_token(server.port)
            time.sleep(2)
            print(f"server {binary} (pid {server.proc.pid}, RLIMIT_NOFILE {SERVER_FD_LIMIT}); "
                  f"idle RSS {server.rss_mib():.1f} MiB", flush=True)
            for phase in PHASES:
                if phase not in only:
                    continue
                if phase in ("slowloris", "logins"):
                    globals()["phase_" + phase](server)
                else:
                    globals()["phase_" + phase](server, token)
        finally:
            server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
