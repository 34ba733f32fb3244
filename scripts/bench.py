#!/usr/bin/env python3
"""The fixed performance workloads of Möbius, printed as a table.

Method (same as the figures we compare against): release build, temp DATA_DIR, the server
pinned to CPU 0 and wrk pinned to CPU 1, `wrk -t1 -c32 -d10s` and `-c1` after a 3 s warm-up,
three accepted runs each reported min / median / max. A run is accepted only when the rest of
the machine used less than 0.15 cores during it (waiting up to 90 s for < 0.10 before
starting). Run through `scripts/bench`, which builds everything first.

Usage: bench.py BINARY [--only SECTION,...] [--quick] [--baseline BINARY] [--no-gate]
                [--against BINARY --against-label NAME]
`--no-gate` runs each measurement once whatever else the machine does, printing the cores
other processes used meanwhile (for a shared machine; such figures are marked by that line).
Sections: boot, health, chats, sse, snapshot, apply, proxy, connectors, storage, appdoc, theme, push, schedules, lifecycle, frontend, review, search, sandbox, jobs, flood, scale, uploads, agents, updates, regressions
`--against` names an earlier build (`scripts/bench --against COMMIT` builds one): the regressions
section then measures the issue-39 figures on both, interleaved, and prints them side by side.
`--baseline` names a build without chat search (e.g. a release build of the previous main); the
search section then runs its write and chat-detail workloads on both and prints the change. The
push section compares idle RSS against it (a build without push).
MOBIUS_BENCH_REVIEW_BASELINE names another PWA build's dist/ (`scripts/bench --review-against COMMIT`
makes one): the review section then opens turns without edits on both, interleaved.
"""
import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
RESULTS = []  # (section, workload, value text, target text)
QUICK = False
NO_GATE = False  # --no-gate: run once whatever the load, and print the load seen
BINARY = ""  # the server binary under test; bench examples are built beside it


def note(section, workload, value, target=""):
    RESULTS.append((section, workload, value, target))
    print(f"  {section:9} {workload:58} {value:42} {target}", flush=True)


def fmt3(values, unit="", digits=1):
    vals = sorted(values)
    f = f"{{:.{digits}f}}"
    if len(vals) == 1:
        return f.format(vals[0]) + unit
    return " / ".join(f.format(v) for v in (vals[0], statistics.median(vals), vals[-1])) + unit


# ---- machine load gate ----

def busy_jiffies():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = list(map(int, parts))
    idle = vals[3] + vals[4]
    return sum(vals) - idle


def proc_jiffies(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    except OSError:
        return 0


def own_jiffies():
    t = os.times()
    return (t.user + t.system + t.children_user + t.children_system) * CLK_TCK


class Gate:
    """Measures CPU used by everything except the server and this harness."""

    def __init__(self, server_pid):
        self.pid = server_pid

    def sample(self):
        return busy_jiffies(), proc_jiffies(self.pid), own_jiffies(), time.monotonic()

    def foreign_cores(self, a, b):
        busy = b[0] - a[0]
        mine = (b[1] - a[1]) + (b[2] - a[2])
        secs = max(b[3] - a[3], 1e-3)
        return max(busy - mine, 0) / CLK_TCK / secs

    def wait_quiet(self, limit=0.10, timeout=90):
        if NO_GATE:
            return True
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            a = self.sample()
            time.sleep(1)
            if self.foreign_cores(a, self.sample()) < limit:
                return True
        return False

    def run(self, fn, attempts=6, limit=0.15):
        """Runs fn until it completes with the machine otherwise quiet; returns its result."""
        result = None
        for _ in range(attempts):
            self.wait_quiet()
            a = self.sample()
            result = fn()
            foreign = self.foreign_cores(a, self.sample())
            if NO_GATE:
                print(f"    (other processes used {foreign:.2f} cores during this run)", flush=True)
                return result
            if foreign < limit:
                return result
        print("    (machine stayed busy; keeping the last run)", flush=True)
        return result


# ---- server process ----

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path, token=None, timeout=0.5):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": "Bearer " + token} if token else {}
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def http_json(port, method, path, body=None, token=None, timeout=30, form=False):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        if form:
            data = "&".join(f"{k}={v}" for k, v in body.items())
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    try:
        return r.status, json.loads(raw) if raw else None
    except ValueError:
        return r.status, raw


class Server:
    def __init__(self, binary, data_dir, extra_env=None, cpu="0", log=None):
        self.port = free_port()
        env = dict(os.environ)
        env.update({
            "DATA_DIR": data_dir,
            "MOBIUS_BIND": f"127.0.0.1:{self.port}",
            "MOBIUS_LOG": "warn",
            # MOBIUS_BENCH_FRONTEND_DIR: another build of the PWA (e.g. the baseline's).
            "MOBIUS_FRONTEND_DIR": os.environ.get("MOBIUS_BENCH_FRONTEND_DIR", os.path.join(ROOT, "frontend", "dist")),
            "MOBIUS_SKILL_DIR": os.path.join(ROOT, "skill"),
        })
        env.update(extra_env or {})
        self.started = time.perf_counter()
        self.started_clock_ns = time.monotonic_ns()  # the clock the server's "listening at" reads
        cmd = ["taskset", "-c", cpu, binary, "serve"] if cpu is not None else [binary, "serve"]
        err = open(log, "w") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        if log:
            err.close()

    def wait(self, path="/api/ready", poll=0.002, timeout=30):
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            try:
                status, _ = http_get(self.port, path, timeout=0.5)
                if status == 200:
                    return time.perf_counter() - self.started
            except OSError:
                pass
            time.sleep(poll)
        raise SystemExit(f"server never answered {path}")

    def status(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads", "RssAnon", "RssFile"):
                    out[k] = v.strip()
        return out

    def rss_mib(self):
        return int(self.status()["VmRSS"].split()[0]) / 1024

    def anon_mib(self):
        return int(self.status()["RssAnon"].split()[0]) / 1024

    def hwm_mib(self):
        return int(self.status()["VmHWM"].split()[0]) / 1024

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def owner_token(port):
    status, body = http_json(port, "POST", "/api/auth/setup", {"username": "owner", "password": "bench-password-1"})
    if status != 200:
        status, body = http_json(port, "POST", "/api/auth/token", {"username": "owner", "password": "bench-password-1"}, form=True)
    return body["access_token"]


# ---- wrk ----

WRK_LAT = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.M)


def wrk(url, conns, duration, token=None, script=None):
    cmd = ["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "10s"]
    if token:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {}
    for q, v, unit in WRK_LAT.findall(out):
        lat[q] = float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, lat.get("50", float("nan")), lat.get("99", float("nan")), int(errors.group(1)) if errors else 0


def load(server, gate, label, path, token=None, script=None, targets=None, conns=(32, 1)):
    url = f"http://127.0.0.1:{server.port}{path}"
    duration = 3 if QUICK else 10
    runs = 1 if QUICK else 3
    wrk(url, 32, 3 if not QUICK else 1, token, script)  # warm-up, unrecorded
    for c in conns:
        results = [gate.run(lambda: wrk(url, c, duration, token, script)) for _ in range(runs)]
        bad = sum(r[3] for r in results)
        t = (targets or {}).get(c, "")
        note(label, f"c={c} requests/s", fmt3([r[0] for r in results], "", 0), t.split("|")[0] if t else "")
        note(label, f"c={c} p50 / p99 ms (min/med/max)", fmt3([r[1] for r in results], "", 2) + "  |  " + fmt3([r[2] for r in results], "", 2),
             t.split("|")[1] if "|" in t else "")
        if bad:
            note(label, f"c={c} non-2xx responses", str(bad), "must be 0")


# ---- sections ----

def section_boot_and_health(binary, tmp):
    print("boot + health", flush=True)
    cold_empty, cold_full, idle, used = [], [], [], []
    for i in range(1 if QUICK else 3):
        d = tempfile.mkdtemp(dir=tmp)
        s = Server(binary, d)
        gate = Gate(s.proc.pid)
        cold_empty.append(s.wait() * 1000)
        # The baseline's method: 5 s after boot, empty DATA_DIR, nothing asked yet.
        time.sleep(5)
        idle.append(s.rss_mib())
        # Then a little real use: the owner set up, five sign-ins (argon2, 19 MiB each), 20 chats.
        token = owner_token(s.port)
        for _ in range(5):
            owner_token(s.port)
        populate_small(s.port, token, 20)
        time.sleep(5)
        used.append(s.rss_mib())
        s.stop()
        s = Server(binary, d)
        cold_full.append(s.wait() * 1000)
        s.stop()
    note("boot", "cold start to /api/ready, empty DATA_DIR (ms)", fmt3(cold_empty), "≤ 20 ms")
    note("boot", "cold start to /api/ready, populated DATA_DIR (ms)", fmt3(cold_full), "≤ 12 ms")
    boot_breakdown(binary, tmp, d)
    note("memory", "idle RSS 5 s after boot (MiB)", fmt3(idle), "≤ 12.5 MiB")
    note("memory", "RSS 5 s after setup, 5 sign-ins and 20 chats (MiB)", fmt3(used), "")
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    time.sleep(5)
    gate = Gate(s.proc.pid)
    load(s, gate, "health", "/api/health", targets={32: "≥ 54,700|p99 ≤ 2 ms"})
    # The PWA's probes carry the owner's token: a route that needs no identity ignores it.
    token = owner_token(s.port)
    load(s, gate, "health+bearer", "/api/health", token, targets={32: "≥ 54,700 (as without)|"}, conns=(32,))
    time.sleep(5)
    note("memory", "RSS 5 s after the health load (MiB)", f"{s.rss_mib():.1f}", "")
    s.stop()


READY_LINE = re.compile(r"ready in ([\d.]+) ms: (.*?)(?: frontend=|$)", re.M)
PROCESS_CPU = re.compile(r"cpu ([\d.]+) ms, (\d+) page faults")
LISTENING_AT = re.compile(r"listening at ([\d.]+) ms")


def boot_steps(binary, data_dir, tmp):
    """One boot with the server's own timing of each step: a dict with the server's total
    (listening → ready, ms), its steps [(step, ms)], and where the build reports them, exec →
    listening on the monotonic clock (from just before the bench starts the process) and the
    process's CPU (all threads, ms) and page faults by the time it was ready."""
    log = os.path.join(tmp, f"boot-{time.monotonic_ns()}.log")
    s = Server(binary, data_dir, {"MOBIUS_LOG": "info"}, log=log)
    s.wait()
    found = None
    for _ in range(500):
        with open(log, errors="replace") as f:
            found = READY_LINE.search(f.read())
        if found:
            break
        time.sleep(0.01)
    s.stop()
    if not found:
        return None
    parts = found.group(2).split("; ")
    steps = []
    for part in parts[0].split(", "):
        name, _, ms = part.rpartition(" ")
        steps.append((name, float(ms)))
    out = {"total": float(found.group(1)), "steps": steps}
    for part in parts[1:]:
        if m := PROCESS_CPU.search(part):
            out["cpu"] = float(m.group(1))
            out["faults"] = int(m.group(2))
        if m := LISTENING_AT.search(part):
            out["exec"] = float(m.group(1)) - s.started_clock_ns / 1e6
    return out


def boot_breakdown(binary, tmp, populated):
    """What boot does, step by step (the server's own clock): exec → listening, then each step
    between listening and ready, and the CPU and page faults the whole start took."""
    runs = {"empty": [], "populated": []}
    for _ in range(1 if QUICK else 3):
        runs["empty"].append(boot_steps(binary, tempfile.mkdtemp(dir=tmp), tmp))
        runs["populated"].append(boot_steps(binary, populated, tmp))
    if not all(runs["empty"]) or not all(runs["populated"]):
        note("boot", "steps between listening and ready", "no 'ready in' line (an older build?)", "")
        return
    med = lambda kind, f: statistics.median(f(r) for r in runs[kind])
    if all("exec" in r for k in runs for r in runs[k]):
        note("boot", "exec → listening, monotonic clock — empty | populated (median ms)",
             f"{med('empty', lambda r: r['exec']):.2f}  |  {med('populated', lambda r: r['exec']):.2f}", "")
    for kind in ("empty", "populated"):
        note("boot", f"listening → ready, {kind} (server's clock, ms)", fmt3([r["total"] for r in runs[kind]], "", 2), "")
    names = [name for name, _ in runs["empty"][0]["steps"]]
    for name in names:
        per = {k: [dict(r["steps"]).get(name, 0.0) for r in runs[k]] for k in runs}
        note("boot", f"  step: {name} — empty | populated (median ms)",
             f"{statistics.median(per['empty']):.2f}  |  {statistics.median(per['populated']):.2f}", "")
    if all("cpu" in r for k in runs for r in runs[k]):
        note("boot", "  CPU exec → ready, all threads — empty | populated (median ms)",
             f"{med('empty', lambda r: r['cpu']):.2f}  |  {med('populated', lambda r: r['cpu']):.2f}", "")
        note("boot", "  page faults exec → ready — empty | populated (median)",
             f"{med('empty', lambda r: r['faults']):.0f}  |  {med('populated', lambda r: r['faults']):.0f}", "")


def words(rng, n):
    vocab = ("alpha beta gamma delta server phone chat agent build apply storage react table "
             "query index stream token owner device queue render module bundle shell route "
             "cache write read list sheet note plan draft event sync").split()
    out = []
    while sum(len(w) + 1 for w in out) < n:
        out.append(rng.choice(vocab))
    return " ".join(out)[:n]


def populate_small(port, token, n):
    for i in range(n):
        http_json(port, "POST", "/api/chats", {"title": f"Bench chat {i:03}", "messages": [
            {"role": "user", "content": "hello", "ts": 1780000000000 + i},
            {"role": "assistant", "content": "hi there", "blocks": [{"type": "text", "content": "hi there"}], "ts": 1780000000001 + i},
        ]}, token=token)


def big_chat_messages():
    rng = random.Random(42)
    ts = 1780000000000
    messages = []
    for i in range(2000):
        ts += rng.randint(1000, 60000)
        if i % 2 == 0:
            messages.append({"role": "user", "content": words(rng, 300), "ts": ts})
        else:
            text = words(rng, 300)
            messages.append({"role": "assistant", "content": text, "ts": ts, "blocks": [
                {"type": "text", "content": text},
                {"type": "tool", "tool": "Bash", "tool_use_id": f"toolu_{i:08d}{rng.getrandbits(32):08x}",
                 "input": "ls -la /data/apps/" + words(rng, 20), "output": words(rng, 400), "status": "done"},
            ]})
    return messages


def section_chats(binary, tmp):
    print("chats", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    populate_small(s.port, token, 199)
    status, _ = http_json(s.port, "POST", "/api/chats", {"id": "big", "title": "Big chat", "messages": big_chat_messages()}, token=token, timeout=120)
    assert status in (200, 201), status
    _, body = http_get(s.port, "/api/chats", token)
    note("chats", "GET /api/chats payload (200 chats, bytes)", str(len(body)), "")
    _, body = http_get(s.port, "/api/chats/big?limit=20", token)
    note("chats", "GET /api/chats/{big}?limit=20 payload (bytes)", str(len(body)), "")
    gate = Gate(s.proc.pid)
    load(s, gate, "chats", "/api/chats", token, targets={32: "≥ 31,500 (before the wave)|p99 ≤ 10 ms"})
    load(s, gate, "chats", "/api/chats/big?limit=20", token, targets={32: "≥ 33,500 (before the wave)|p99 ≤ 5 ms"})
    note("memory", "RSS after the chat loads (MiB) / peak (VmHWM)", f"{s.rss_mib():.1f} / {s.hwm_mib():.1f}", "")
    s.stop()


def example(name):
    """A release build of a bench example, beside the server binary (`cargo build --examples`)."""
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(BINARY)))
    return os.path.join(target, "release", "examples", name)


def sse_round(port, token, subscribers, events):
    """Runs the Rust fan-out client on CPU 1; returns (p50, p99, max, missed)."""
    exe = example("sse_fanout")
    out = subprocess.run(["taskset", "-c", "1", exe, str(port), token, str(subscribers), str(events)],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["p50_ms"], r["p99_ms"], r["max_ms"], r["missed"]


def section_sse(binary, tmp):
    print("sse", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    gate = Gate(s.proc.pid)
    for subscribers, target in ((50, "p50 ≤ 0.80, p99 ≤ 1 ms, none missed"), (200, "p99 ≤ 5 ms, none missed")):
        p50s, p99s, missed_total = [], [], 0
        for _ in range(1 if QUICK else 3):
            p50, p99, _, missed = gate.run(lambda: sse_round(s.port, token, subscribers, 20))
            p50s.append(p50)
            p99s.append(p99)
            missed_total += missed
        note("sse", f"{subscribers} subscribers: delivery p50 | p99 ms", fmt3(p50s, "", 2) + "  |  " + fmt3(p99s, "", 2), target)
        note("sse", f"{subscribers} subscribers: missed deliveries", str(missed_total), "0")
    s.stop()


def section_snapshot(tmp):
    print("snapshot", flush=True)
    exe = example("snapshot_cost")
    out = subprocess.run(["taskset", "-c", "0", exe, tmp], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        r = json.loads(line)
        note("snapshot", f"live-snapshot write, {r['history']:,} history msgs: p50 | p99 ms",
             f"{r['p50_ms']:.3f}  |  {r['p99_ms']:.3f}", "flat")


COUNTER_JSX = """import { useState } from "react";
export default function App() {
  const [count, setCount] = useState(0);
  const [items, setItems] = useState([]);
  return (
    <div>
      <h1>Counter TITLE</h1>
      <p>Count: {count}</p>
      <button onClick={() => setCount(count + 1)}>+1</button>
      <button onClick={() => setItems([...items, count])}>Save</button>
      <ul>{items.map((n, i) => <li key={i}>{n}</li>)}</ul>
    </div>
  );
}
"""

DASHBOARD_JSX = """import { useMemo, useState } from "react";
import { LineChart, Line, XAxis, YAxis, Tooltip, ResponsiveContainer } from "recharts";
import { Activity, TrendingUp } from "lucide-react";
import { format, subDays } from "date-fns";
export default function App() {
  const [days, setDays] = useState(14);
  const data = useMemo(() => Array.from({ length: days }, (_, i) => ({
    day: format(subDays(new Date(2026, 0, 31), days - i), "MMM d"), value: Math.round(50 + 30 * Math.sin(i / 2)) })), [days]);
  return (
    <main>
      <h1><Activity size={20} /> Dashboard TITLE <TrendingUp size={20} /></h1>
      <button onClick={() => setDays(days === 14 ? 30 : 14)}>Toggle range</button>
      <div style={{ height: 240 }}>
        <ResponsiveContainer><LineChart data={data}><XAxis dataKey="day" /><YAxis /><Tooltip />
          <Line type="monotone" dataKey="value" stroke="#4f46e5" /></LineChart></ResponsiveContainer>
      </div>
    </main>
  );
}
"""


def write_app(data_dir, slug, source, title):
    d = os.path.join(data_dir, "apps", slug)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "mobius.json"), "w") as f:
        json.dump({"id": slug, "name": f"Bench {slug}", "version": "0.1.0", "description": "Benchmark app.",
                   "entry": "index.jsx", "offline_capable": False, "permissions": {}, "source_files": []}, f)
    with open(os.path.join(d, "index.jsx"), "w") as f:
        f.write(source.replace("TITLE", title))


def timed_apply(port, token, slug):
    t0 = time.perf_counter()
    status, body = http_json(port, "POST", "/api/apps/apply", {"slug": slug}, token=token, timeout=120)
    elapsed = (time.perf_counter() - t0) * 1000
    if status != 200:
        raise SystemExit(f"apply {slug} failed: {status} {body}")
    return elapsed, body


def app_env():
    return {"MOBIUS_APP_NODE_MODULES": os.path.join(ROOT, "frontend", "node_modules"),
            "MOBIUS_APP_RUNTIME_DIR": os.path.join(ROOT, "frontend", "public")}


def section_apply(binary, tmp):
    print("apply", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, app_env())
    s.wait()
    token = owner_token(s.port)
    gate = Gate(s.proc.pid)
    n = 3 if QUICK else 10
    write_app(d, "warmup", COUNTER_JSX, "v0")
    timed_apply(s.port, token, "warmup")
    created, edited = [], []
    # Every attempt (the gate retries a noisy one) applies something new: a repeat of the same
    # source would take the "unchanged" shortcut and time nothing.
    fresh = iter(range(1_000_000))

    def apply_new():
        slug = f"bench-app-{next(fresh)}"
        write_app(d, slug, COUNTER_JSX, "v1")
        return timed_apply(s.port, token, slug)[0]

    def apply_edit():
        write_app(d, "bench-app-0", COUNTER_JSX, f"v{next(fresh) + 2}")
        return timed_apply(s.port, token, "bench-app-0")[0]

    for _ in range(n):
        created.append(gate.run(apply_new))
    for _ in range(n):
        edited.append(gate.run(apply_edit))
    note("apply", f"apply a new counter app (ms, median of {n}; min/med/max)", fmt3(created), "≤ 90 ms")
    note("apply", f"apply an edited counter app (ms, median of {n})", fmt3(edited), "≤ 90 ms")
    rss_before = s.rss_mib()
    write_app(d, "dashboard", DASHBOARD_JSX, "v0")
    timed_apply(s.port, token, "dashboard")
    warm = []

    def apply_dashboard():
        write_app(d, "dashboard", DASHBOARD_JSX, f"v{next(fresh) + 1}")
        return timed_apply(s.port, token, "dashboard")[0]

    for _ in range(3 if QUICK else 5):
        warm.append(gate.run(apply_dashboard))
    note("apply", "warm recharts dashboard apply (ms, min/med/max)", fmt3(warm), "≤ 350 ms")
    note("memory", "peak RSS added by compiles (VmHWM − RSS before, MiB)", f"{s.hwm_mib() - rss_before:.1f}", "≤ 120 MiB")
    time.sleep(5)
    note("memory", "RSS 5 s after the compiles (MiB)", f"{s.rss_mib():.1f}", "")
    s.stop()
    section_large_apply(binary, tmp)


def large_app(d, slug, title):
    """An app of about 3,500 lines importing CodeMirror, KaTeX and marked, over a dozen files."""
    app = os.path.join(d, "apps", slug)
    os.makedirs(os.path.join(app, "lib"), exist_ok=True)
    with open(os.path.join(app, "mobius.json"), "w") as f:
        json.dump({"id": slug, "name": "Bench notebook", "version": "0.1.0", "description": "A large benchmark app.",
                   "entry": "index.jsx", "embeds_agent": True, "offline": {"reads": True}}, f)
    lines = 0
    imports = []
    for m in range(12):
        body = [f"// Generated module {m} of the large benchmark app."]
        for k in range(45):
            body += [f"export function transform{m}_{k}(cells, options = {{}}) {{",
                     f"  const factor = (options.factor ?? {k + 1}) * {m + 1};",
                     "  return cells.map((cell, index) => ({ ...cell, score: (cell.score ?? 0) + factor * index,",
                     f"    label: `${{cell.label ?? 'cell'}}-{m}-{k}`, done: index % {k + 2} === 0 }}));",
                     "}", ""]
        text = "\n".join(body) + "\n"
        lines += text.count("\n")
        with open(os.path.join(app, "lib", f"transforms{m}.js"), "w") as f:
            f.write(text)
        imports.append(f'import * as t{m} from "./lib/transforms{m}.js";')
    views = []
    for v in range(40):
        views += [f"function Panel{v}({{ cells, onPick }}) {{",
                  "  return (",
                  f'    <section className="panel panel-{v}">',
                  f"      <h3>Panel {v} TITLE</h3>",
                  "      <ul>{cells.slice(0, 5).map((c) => <li key={c.id} onClick={() => onPick(c)}>{c.label}: {c.score}</li>)}</ul>",
                  "    </section>",
                  "  );",
                  "}", ""]
    index = "\n".join([
        'import { useEffect, useMemo, useRef, useState } from "react";',
        'import { EditorView, basicSetup } from "codemirror";',
        'import { markdown } from "@codemirror/lang-markdown";',
        'import katex from "katex";',
        'import "katex/dist/katex.min.css";',
        'import { marked } from "marked";',
        *imports,
        "",
        *views,
        "export default function Notebook() {",
        "  const host = useRef(null);",
        "  const [text, setText] = useState('# Notes TITLE\\n\\n$x^2$');",
        "  const [picked, setPicked] = useState(null);",
        "  useEffect(() => {",
        "    const view = new EditorView({ doc: text, extensions: [basicSetup, markdown(),",
        "      EditorView.updateListener.of((u) => u.docChanged && setText(u.state.doc.toString()))], parent: host.current });",
        "    return () => view.destroy();",
        "  }, []);",
        "  const cells = useMemo(() => " + " ".join(f"t{m}.transform{m}_0(" for m in range(12)) +
        "Array.from({ length: 20 }, (_, i) => ({ id: i, label: 'c' + i }))" + ")" * 12 + ", []);",
        "  const html = useMemo(() => marked.parse(text), [text]);",
        "  const math = useMemo(() => katex.renderToString('x^2 + y^2', { throwOnError: false }), []);",
        "  return (",
        "    <main>",
        "      <div ref={host} />",
        "      <article dangerouslySetInnerHTML={{ __html: html }} />",
        "      <div dangerouslySetInnerHTML={{ __html: math }} />",
        "      {picked ? <p>Picked {picked.label}</p> : null}",
        *[f"      <Panel{v} cells={{cells}} onPick={{setPicked}} />" for v in range(40)],
        "    </main>",
        "  );",
        "}",
        "",
    ])
    lines += index.count("\n")
    with open(os.path.join(app, "index.jsx"), "w") as f:
        f.write(index.replace("TITLE", title))
    return lines


def section_shell(binary, tmp):
    """`mobius shell rebuild` after a one-line edit of the real shell (vite over its whole source),
    on the machine's cores as a build runs in production (the server is not pinned here)."""
    print("shell", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    env = {"MOBIUS_SHELL_SOURCE": os.path.join(ROOT, "frontend"),
           "MOBIUS_SHELL_NODE_MODULES": os.path.join(ROOT, "frontend", "node_modules"),
           # The rebuilds timed are the command's; the watcher would add its own after each edit.
           "MOBIUS_SHELL_WATCH_MS": "0"}
    s = Server(binary, d, env, cpu=None)
    s.wait()
    token = owner_token(s.port)
    drawer = os.path.join(d, "platform", "shell", "src", "components", "shell", "Drawer.tsx")
    # The source is seeded once the server is ready, off the boot path.
    wait_shell_prepared(s.port, token)
    times = []
    for i in range(1 if QUICK else 3):
        with open(drawer) as f:
            text = f.read()
        edited = re.sub(r"<span>New chat[^<]*</span>", f"<span>New chat {i}</span>", text, count=1)
        with open(drawer, "w") as f:
            f.write(edited)
        t0 = time.perf_counter()
        status, body = http_json(s.port, "POST", "/api/shell/rebuild", {}, token=token, timeout=600)
        if status != 200:
            raise SystemExit(f"shell rebuild failed: {status} {body}")
        times.append(time.perf_counter() - t0)
    note("shell", f"rebuild after a one-line edit (s, {len(times)} runs; min/med/max)", fmt3(times), "≤ 30 s")
    s.stop()
    # What watching the real shell's source costs while nobody edits: the server's CPU time over
    # an idle spell, with the watcher (its default) and without.
    idle = 5 if QUICK else 10
    spent = {}
    for watch in ("2000", "0"):
        wd = tempfile.mkdtemp(dir=tmp)
        w = Server(binary, wd, {**env, "MOBIUS_SHELL_WATCH_MS": watch}, cpu=None)
        w.wait()
        # After what follows the first boot (the source's seed, the watcher's start).
        wait_shell_prepared(w.port, owner_token(w.port))
        time.sleep(2)
        before = cpu_ns(w.proc.pid)
        time.sleep(idle)
        spent[watch] = (cpu_ns(w.proc.pid) - before) / 1e6
        w.stop()
    note("shell", f"server CPU while idle {idle} s, watcher on | off (ms)", f"{spent['2000']:.2f}  |  {spent['0']:.2f}",
         "nothing measurable")


def wait_shell_prepared(port, token):
    """Until `GET /api/shell` says what follows a boot (seed, merge, watcher start) is done."""
    for _ in range(3000):
        status, body = http_json(port, "GET", "/api/shell", token=token)
        if status == 200 and body.get("prepared"):
            return
        time.sleep(0.01)
    raise SystemExit("the shell was never prepared after boot")


def cpu_ns(pid):
    """CPU time of every live thread of `pid` so far (ns, from the scheduler's own accounting:
    finer than the 10 ms ticks of /proc/<pid>/stat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def cpu_ms(pid):
    """User + system CPU time of `pid` so far (ms)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def section_large_apply(binary, tmp):
    """Apply of a ~3,500-line app with CodeMirror, KaTeX and marked, on a fresh server."""
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, app_env())
    s.wait()
    token = owner_token(s.port)
    gate = Gate(s.proc.pid)
    rss_before = s.rss_mib()
    lines = large_app(d, "notebook", "v0")
    timed_apply(s.port, token, "notebook")
    fresh = iter(range(1, 1_000_000))

    def apply_large():
        large_app(d, "notebook", f"v{next(fresh)}")
        return timed_apply(s.port, token, "notebook")[0]

    warm = [gate.run(apply_large) for _ in range(3 if QUICK else 5)]
    note("apply", f"warm apply, {lines:,}-line app with CodeMirror+KaTeX+marked (ms)", fmt3(warm), "≤ 600 ms")
    note("memory", "peak RSS added by the large app's compiles (MiB)", f"{s.hwm_mib() - rss_before:.1f}", "≤ 150 MiB")
    time.sleep(5)
    note("memory", "RSS 5 s after them, over the RSS before (MiB)", f"{s.rss_mib() - rss_before:+.1f}", "returned")
    s.stop()


def section_proxy(tmp):
    """/api/proxy GET of a 100 KiB loopback response against the same GET made directly."""
    print("proxy", flush=True)
    exe = example("proxy_overhead")
    runs = "200" if QUICK else "1000"
    out = subprocess.run(["taskset", "-c", "0", exe, runs], capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    note("proxy", f"GET 100 KiB direct | via /api/proxy, p50 ms ({r['runs']} each)",
         f"{r['direct_p50_ms']:.2f}  |  {r['proxy_p50_ms']:.2f}", "")
    note("proxy", "proxy overhead over a direct fetch, p50 (ms)", f"{r['overhead_p50_ms']:.2f}", "≤ 5 ms")


def section_connectors(tmp):
    """The connector broker: an MCP call direct and via /api/mcp, and 100 MiB streamed through it."""
    print("connectors", flush=True)
    exe = example("broker_overhead")
    runs = "200" if QUICK else "1000"
    out = subprocess.run(["taskset", "-c", "0", exe, runs], capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    note("connectors", f"MCP call direct | via the broker, p50 ms ({r['runs']} each)",
         f"{r['direct_p50_ms']:.2f}  |  {r['broker_p50_ms']:.2f}", "")
    note("connectors", "broker overhead per tool call, p50 (ms)", f"{r['overhead_p50_ms']:.2f}", "≤ 2 ms")
    note("connectors", f"{r['streamed_mib']} MiB streamed through the broker: RSS growth (MiB)",
         f"{r['rss_growth_mib']}", "flat (≤ 16)")


def app_server(binary, tmp, slug, source, title):
    """A fresh server with one applied app: (server, owner token, app id, data dir)."""
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, app_env())
    s.wait()
    token = owner_token(s.port)
    write_app(d, slug, source, title)
    _, body = timed_apply(s.port, token, slug)
    return s, token, body["app"]["id"], d


DOC_993 = json.dumps({"version": 0, "items": [{"id": i, "title": ("Task number %02d with a longer title" % i)[:40], "done": i % 3 == 0} for i in range(12)]})


def section_storage(binary, tmp):
    print("storage", flush=True)
    s, token, app_id, d = app_server(binary, tmp, "bench", COUNTER_JSX, "v1")
    _, t = http_json(s.port, "POST", "/api/auth/app-token", {"app_id": app_id}, token=token)
    app_token = t["token"]
    path = f"/api/storage/apps/{app_id}/bench/doc.json"
    status, _ = http_json(s.port, "PUT", path, json.loads(DOC_993), token=app_token)
    assert status in (200, 204), status
    gate = Gate(s.proc.pid)
    load(s, gate, "storage", path, app_token, targets={32: "≥ 9,000 GET/s|p99 ≤ 10 ms"})
    lua = os.path.join(d, "put.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "PUT"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' % json.dumps(DOC_993))
    load(s, gate, "storage PUT", path, app_token, script=lua, targets={32: "≥ 2,000 PUT/s|p99 ≤ 10 ms"})

    def roundtrip():
        samples = []
        for i in range(200):
            doc = json.loads(DOC_993)
            doc["version"] = i
            t0 = time.perf_counter()
            http_json(s.port, "PUT", f"/api/storage/apps/{app_id}/bench/rt-{i % 10}.json", doc, token=app_token)
            status, back = http_json(s.port, "GET", f"/api/storage/apps/{app_id}/bench/rt-{i % 10}.json", token=app_token)
            samples.append((time.perf_counter() - t0) * 1000)
            assert back == doc, "round trip returned other data"
        samples.sort()
        return samples[len(samples) // 2], samples[int(len(samples) * 0.99) - 1]
    rt = [gate.run(roundtrip) for _ in range(1 if QUICK else 3)]
    note("storage", "PUT then GET round trip, p50 | p99 ms", fmt3([r[0] for r in rt], "", 2) + "  |  " + fmt3([r[1] for r in rt], "", 2), "")
    s.stop()


USE_DOCUMENT_JSX = """import React, { useEffect, useRef } from "react";

const useDocument = window.mobius.createUseDocument(React);

export default function Bench() {
  const doc = useDocument("bench/doc.json", { initial: { n: 0 } });
  const latest = useRef(doc);
  latest.current = doc;
  useEffect(() => {
    window.__bench = {
      ready: () => latest.current.status === "ready",
      update: () => latest.current.update((d) => ({ ...d, n: (d && d.n ? d.n : 0) + 1 })),
      value: () => latest.current.value,
    };
  }, []);
  return <main><h1>Bench {doc.value ? doc.value.n : 0}</h1></main>;
}
"""


def section_appdoc(binary, tmp):
    """useDocument update round trip in Chromium: frame -> shell -> server -> ack."""
    print("appdoc", flush=True)
    s, token, app_id, _ = app_server(binary, tmp, "doc", USE_DOCUMENT_JSX, "")
    gate = Gate(s.proc.pid)
    env = dict(os.environ, MOBIUS_URL=f"http://127.0.0.1:{s.port}", MOBIUS_TOKEN=token, BENCH_APP_ID=str(app_id),
               BENCH_ROUNDS="100" if QUICK else "300")

    # Chromium is not pinned to CPU 1 like wrk: its renderer, browser and network processes run in
    # parallel, and confined to one core it measures the core (its bare fetch alone then costs
    # about 4.5 ms here), not the runtime. The server stays on CPU 0.
    def run():
        out = subprocess.run(["node", os.path.join(ROOT, "frontend", "scripts", "bench-app.mjs")],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"bench-app.mjs failed: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    try:
        runs = [gate.run(run) for _ in range(1 if QUICK else 3)]
    finally:
        s.stop()
    for key, label in (("update", "useDocument update round trip (frame→shell→server→ack), p50 | p99 ms"),
                       ("write", "durableWrite round trip (frame→shell→server→ack), p50 | p99 ms"),
                       ("fetch", "floor: the same PUT by a bare fetch in the shell page, p50 | p99 ms")):
        p50 = fmt3([r[key]["p50"] for r in runs], "", 2)
        p99 = fmt3([r[key]["p99"] for r in runs], "", 2)
        note("appdoc", label, f"{p50}  |  {p99}", "p50 ≤ 5 ms" if key == "update" else "")


SWATCH_JSX = """import React from "react";
export default function App() {
  return <button type="button" style={{ background: "var(--accent)", color: "var(--accent-fg)" }}>TITLE</button>;
}
"""


def section_theme(binary, tmp):
    """Theme change to restyled page: `POST /api/theme/apply` of a new accent until the open shell
    and an open app frame paint it, in Chromium at phone size (the agent's `mobius theme apply`)."""
    print("theme", flush=True)
    s, token, app_id, d = app_server(binary, tmp, "swatch", SWATCH_JSX, "Accent")
    gate = Gate(s.proc.pid)
    env = dict(os.environ, MOBIUS_URL=f"http://127.0.0.1:{s.port}", MOBIUS_TOKEN=token, BENCH_APP_ID=str(app_id),
               BENCH_DATA_DIR=d, BENCH_ROUNDS="10" if QUICK else "30")

    def run():
        out = subprocess.run(["node", os.path.join(ROOT, "frontend", "scripts", "bench-theme.mjs")],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"bench-theme.mjs failed: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    try:
        runs = [gate.run(run) for _ in range(1 if QUICK else 3)]
    finally:
        s.stop()
    for doc, label in (("shell", "the open shell"), ("frame", "an open app frame")):
        for key, what in (("styled", "styled"), ("painted", "painted")):
            p50 = fmt3([r[doc][key]["p50"] for r in runs], "", 1)
            p99 = fmt3([r[doc][key]["p99"] for r in runs], "", 1)
            note("theme", f"apply → {label} {what}, p50 | p99 ms", f"{p50}  |  {p99}",
                 "≤ 300 ms" if key == "painted" else "")


def section_screenshot(binary, tmp):
    """`mobius app screenshot` of a small app, warm (the first one, cold, is left out): the
    server's own figure (browser start → PNG) and the request's; the PNG's bytes; the server's
    RSS before and after (the browser is a child that exits)."""
    print("screenshot", flush=True)
    s, token, app_id, _ = app_server(binary, tmp, "shot", COUNTER_JSX, "v1")
    try:
        rss_before = s.rss_mib()

        def shot():
            t0 = time.perf_counter()
            status, body = http_json(s.port, "POST", "/api/screenshots", {"app": "shot"}, token=token, timeout=60)
            wall = (time.perf_counter() - t0) * 1000
            if status != 200:
                raise SystemExit(f"screenshot failed: {status} {body}")
            assert body["settled"], body.get("notes")
            return wall, body["elapsed_ms"], len(base64.b64decode(body["png_base64"])), body["width"], body["height"]
        shot()  # cold: the page cache fills
        # Not gated: the browser is a child of its own, which the gate would count as foreign load.
        runs = [shot() for _ in range(2 if QUICK else 5)]
        rss_after = s.rss_mib()
    finally:
        s.stop()
    w, h = runs[0][3], runs[0][4]
    note("screenshot", f"warm `mobius app screenshot` of a small app (phone, {w}x{h}), request ms",
         fmt3([r[0] for r in runs], "", 0), "≤ 3,000 ms")
    note("screenshot", "of which the browser: start → settled → PNG, ms", fmt3([r[1] for r in runs], "", 0))
    note("screenshot", "PNG bytes", fmt3([r[2] for r in runs], "", 0))
    note("screenshot", "server RSS before | after the screenshots, MiB", f"{rss_before:.1f} | {rss_after:.1f}", "unchanged")


# A valid P-256 point (RFC 8291's example device key) for bench subscriptions.
BENCH_DEVICE_KEY = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"


def push_service():
    """A local push service that accepts everything: (port, count of pushes received)."""
    import http.server
    import threading
    received = [0]

    class Accept(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received[0] += 1
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, received


# How long a server idles after the last push before its RSS is read: the push worker drops its
# client after 10 s without a notice and then trims the heap on a blocking thread, which tokio
# ends after another 10 s idle.
PUSH_IDLE_S = 25


SCHEDULES = 1000
SCHEDULE_IDLE_S = 30


def section_schedules(binary, tmp):
    """Schedules: what 1,000 active schedules cost an idle server (RSS of a fresh process on the
    same data dir with and without them, CPU while idle), the schedule list with 1,000 entries
    (served from the response cache between commits, and right after a write), and how late a
    run starts after its due time (an app job every minute; the job notes when it began)."""
    print("schedules", flush=True)
    s, token, app_id, d = app_server(binary, tmp, "ticker", COUNTER_JSX, "tick")
    job = os.path.join(d, "apps", "ticker", "job.sh")
    with open(job, "w") as f:
        f.write('date +%s%3N >> "$APP_JOB_STATE_DIR/started"\n')
    os.chmod(job, 0o755)
    s.stop()

    def idle_server():
        """A fresh server on `d`, signed in and idle for 10 s: (server, token, RSS, anon)."""
        srv = Server(binary, d, app_env())
        srv.wait()
        tok = owner_token(srv.port)
        time.sleep(10)
        return srv, tok, srv.rss_mib(), srv.anon_mib()

    s, token, rss0, anon0 = idle_server()
    # 1,000 scheduled prompts, each in a new chat, due once a year at different times (none
    # comes due while measuring).
    made = 0
    for i in range(SCHEDULES):
        body = {"prompt": f"bench {i}", "cron": f"{i % 60} {i // 60 % 24} 1 1 *", "new_chat": True, "name": f"bench {i}"}
        status, _ = http_json(s.port, "POST", "/api/schedules", body, token)
        made += status == 201
    assert made == SCHEDULES, made
    end = time.time() + 60
    while time.time() < end:
        _, listed = http_json(s.port, "GET", "/api/schedules", None, token)
        if all(x["next_due_at"] for x in listed["schedules"]):
            break
        time.sleep(0.5)
    s.stop()
    s, token, rss1, anon1 = idle_server()
    jiffies = proc_jiffies(s.proc.pid)
    time.sleep(SCHEDULE_IDLE_S)
    cpu_ms = (proc_jiffies(s.proc.pid) - jiffies) * 1000 / CLK_TCK
    note("schedules", f"fresh server idle RSS: no schedules | {SCHEDULES} active (MiB)", f"{rss0:.2f}  |  {rss1:.2f}", "")
    note("schedules", f"{SCHEDULES} active schedules add, RSS: all | anon (MiB)",
         f"{rss1 - rss0:+.2f}  |  {anon1 - anon0:+.2f}", "≤ 1 MiB")
    note("schedules", f"server CPU over {SCHEDULE_IDLE_S} s idle with {SCHEDULES} schedules (ms)", f"{cpu_ms:.0f}", "not measurable")

    gate = Gate(s.proc.pid)
    _, listed = http_json(s.port, "GET", "/api/schedules", None, token)
    some = listed["schedules"][0]["id"]

    def timed(write_first):
        samples = []
        for i in range(300):
            if write_first:
                http_json(s.port, "PATCH", f"/api/schedules/{some}", {"name": f"bench renamed {i}"}, token)
            t = time.perf_counter()
            status, _ = http_get(s.port, "/api/schedules", token, timeout=5)
            samples.append((time.perf_counter() - t) * 1000)
            assert status == 200, status
        return sorted(samples)
    for label, write_first in (("between commits", False), ("right after a write", True)):
        samples = gate.run(lambda: timed(write_first))
        note("schedules", f"GET /api/schedules, {SCHEDULES} entries, {label}: p50 | p99 (ms)",
             f"{samples[150]:.2f}  |  {samples[296]:.2f}", "≤ 10 ms p99")

    # Start latency: the app's job every minute; each run appends the time its script began.
    status, body = http_json(s.port, "POST", f"/api/apps/{app_id}/schedule", {"cron": "* * * * *", "job": "job.sh"}, token)
    assert status == 200, (status, body)
    runs = 2 if QUICK else 4
    started_file = os.path.join(d, "apps", str(app_id), "job-state", "started")
    deadline = time.time() + 60 * (runs + 1) + 30
    starts = []
    while time.time() < deadline and len(starts) < runs:
        time.sleep(1)
        try:
            with open(started_file) as f:
                starts = [int(x) for x in f.read().split()]
        except FileNotFoundError:
            pass
    late = sorted((ms - (ms // 60000) * 60000) for ms in starts[:runs])
    note("schedules", f"job start after its due time, {len(late)} runs: min / median / max (ms)",
         fmt3(late, "", 0), "≤ 1,000 ms")
    s.stop()


def push_idle_run(binary, tmp):
    """One boot of `binary`: ((rss, anon) idle after boot, (rss, anon) idle after push use), MiB."""
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, {"MOBIUS_PUSH_ALLOW_LOOPBACK": "1"})
    s.wait()
    token = owner_token(s.port)
    time.sleep(5)
    boot = (s.rss_mib(), s.anon_mib())
    httpd, received = push_service()
    statuses = set()
    for i in range(10):
        sub = {"endpoint": f"http://127.0.0.1:{httpd.server_address[1]}/push/{i}",
               "keys": {"p256dh": BENCH_DEVICE_KEY, "auth": "BTBZMqHH6r4Tts7J_aSIgg"}, "label": f"bench {i}"}
        status, _ = http_json(s.port, "POST", "/api/push/subscribe", sub, token)
        statuses.add(status)
    for _ in range(5):
        http_json(s.port, "POST", "/api/push/test", {}, token)
    if statuses == {201}:
        end = time.time() + 30
        while received[0] < 50 and time.time() < end:
            time.sleep(0.05)
        assert received[0] == 50, received[0]
    time.sleep(PUSH_IDLE_S)
    after = (s.rss_mib(), s.anon_mib())
    httpd.shutdown()
    s.stop()
    return boot, after


def section_push(binary, tmp, baseline):
    """Notifications: the cost a finished turn pays (10 devices), idle RSS with push (A/B against
    `--baseline`, a build without push), and listing the centre with 1,000 stored notifications."""
    print("push", flush=True)
    exe = example("push_cost")
    out = subprocess.run(["taskset", "-c", "0", exe], capture_output=True, text=True, check=True,
                         env=dict(os.environ, MOBIUS_BIN=binary)).stdout
    r = json.loads(out.strip().splitlines()[-1])
    note("push", f"turn end with {r['devices']} devices: added to commit path p50 | p99 (µs)",
         f"{r['enqueue_p50_us']:.1f}  |  {r['enqueue_p99_us']:.1f}", "≤ 1 ms")
    note("push", f"turn end → all {r['devices']} pushes received p50 | p99 (ms)",
         f"{r['delivered_p50_ms']:.1f}  |  {r['delivered_p99_ms']:.1f}", "")

    # Idle RSS, A/B on the same harness: each build boots on an empty DATA_DIR, the owner is set
    # up, then idles 5 s ("boot"); then 10 devices subscribe and 5 test pushes go to all of them
    # (on a build without push these requests are 404s), and it idles PUSH_IDLE_S ("after use").
    runs = {"push": [push_idle_run(binary, tmp) for _ in range(1 if QUICK else 3)]}
    if baseline:
        runs["baseline"] = [push_idle_run(baseline, tmp) for _ in range(1 if QUICK else 3)]
    med = lambda name, i, j: statistics.median(r[i][j] for r in runs[name])
    note("push", "idle RSS after boot | after 10 devices, 50 pushes (MiB)",
         f"{med('push', 0, 0):.2f}  |  {med('push', 1, 0):.2f}", "")
    note("push", "idle RSS growth after push use, same process: all | anon (MiB)",
         f"{med('push', 1, 0) - med('push', 0, 0):+.2f}  |  {med('push', 1, 1) - med('push', 0, 1):+.2f}", "≤ 0.5 MiB")
    if baseline:
        note("push", "baseline idle RSS after boot | after the same requests (MiB)",
             f"{med('baseline', 0, 0):.2f}  |  {med('baseline', 1, 0):.2f}", "")
        note("push", "push vs baseline, idle RSS after boot: all | anon (MiB)",
             f"{med('push', 0, 0) - med('baseline', 0, 0):+.2f}  |  {med('push', 0, 1) - med('baseline', 0, 1):+.2f}",
             "≤ 0.5 MiB")
        note("push", "push vs baseline, idle RSS after use: all | anon (MiB)",
             f"{med('push', 1, 0) - med('baseline', 1, 0):+.2f}  |  {med('push', 1, 1) - med('baseline', 1, 1):+.2f}",
             "≤ 0.5 MiB")

    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, {"MOBIUS_PUSH_ALLOW_LOOPBACK": "1"})
    s.wait()
    token = owner_token(s.port)

    # 1,000 stored notifications, written behind the server's back like an old history.
    import sqlite3
    db = sqlite3.connect(os.path.join(d, "db", "mobius.sqlite3"), timeout=10)
    now = int(time.time() * 1000)
    db.executemany(
        "INSERT INTO notifications (id, kind, source_type, source_id, title, body, target, sent_at) VALUES (?,?,?,?,?,?,?,?)",
        [(f"bench-{i:05}", "turn_done", "chat", f"c{i % 20}", f"Chat {i % 20}", "The agent finished. " * 5,
          f"/shell/?chat=c{i % 20}", now - i * 1000) for i in range(1000)])
    db.commit()
    db.close()
    gate = Gate(s.proc.pid)
    for label, path in (("first page of 100", "/api/notifications?limit=100"), ("unread count", "/api/notifications/unread-count")):
        def timed():
            samples = []
            for _ in range(300):
                t = time.perf_counter()
                status, _ = http_get(s.port, path, token, timeout=5)
                samples.append((time.perf_counter() - t) * 1000)
                assert status == 200, status
            return sorted(samples)
        samples = gate.run(timed)
        note("push", f"1,000 stored: {label} p50 | p99 (ms)", f"{samples[150]:.2f}  |  {samples[296]:.2f}", "≤ 5 ms")
    walks = []
    for _ in range(30):
        t = time.perf_counter()
        before, n = None, 0
        while True:
            path = "/api/notifications?limit=100" + (f"&before={before}" if before else "")
            status, body = http_json(s.port, "GET", path, None, token)
            if not body:
                break
            n += len(body)
            before = body[-1]["id"]
        walks.append((time.perf_counter() - t) * 1000)
        assert n >= 1000, n
    walks.sort()
    note("push", "1,000 stored: all of them, 10 pages, p50 | max (ms)", f"{walks[15]:.1f}  |  {walks[-1]:.1f}", "")
def png_bytes(size):
    """A size x size RGB PNG with a gradient (so resizing has real work to do)."""
    import struct
    import zlib
    rows = b"".join(b"\x00" + bytes(v for x in range(size) for v in (x * 255 // size, y * 255 // size, 128)) for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def git_fixture(root, slug, version, title, icon=None):
    """A local git repository holding a counter app: the install and update source."""
    d = os.path.join(root, slug)
    os.makedirs(d, exist_ok=True)
    manifest = {"id": slug, "name": f"Bench {slug}", "version": version, "description": "Benchmark app.",
                "entry": "index.jsx", "author": "Bench", "permissions": {"share_with_apps": "read"}}
    if icon is not None:
        manifest["icon"] = "icon.png"
        with open(os.path.join(d, "icon.png"), "wb") as f:
            f.write(icon)
    with open(os.path.join(d, "mobius.json"), "w") as f:
        json.dump(manifest, f)
    with open(os.path.join(d, "index.jsx"), "w") as f:
        f.write(COUNTER_JSX.replace("TITLE", title))
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "init.defaultBranch=main"]
    if not os.path.isdir(os.path.join(d, ".git")):
        subprocess.run(git + ["init", "-q"], cwd=d, check=True)
    subprocess.run(git + ["add", "-A"], cwd=d, check=True)
    subprocess.run(git + ["commit", "-qm", f"Release {version}"], cwd=d, check=True)
    return d


def section_lifecycle(binary, tmp):
    """Install review, update checks of many apps, icon rendering while the server answers."""
    print("lifecycle", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    sources = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d, app_env())
    s.wait()
    token = owner_token(s.port)
    gate = Gate(s.proc.pid)
    icon = png_bytes(1024)
    small = git_fixture(sources, "review-me", "1.0.0", "Review", icon)

    def review():
        samples = []
        for _ in range(10 if QUICK else 30):
            t0 = time.perf_counter()
            status, body = http_json(s.port, "POST", "/api/apps/review", {"source": small}, token=token)
            samples.append((time.perf_counter() - t0) * 1000)
            assert status == 200 and body["id"] == "review-me", (status, body)
        samples.sort()
        return samples[len(samples) // 2]
    runs = [gate.run(review) for _ in range(3)]
    note("lifecycle", "review card data, small local app with a 1024 px icon (ms, p50)", fmt3(runs), "≤ 150 ms")

    count = 20
    slugs = [f"installed-{i}" for i in range(count)]
    for slug in slugs:
        src = git_fixture(sources, slug, "1.0.0", slug, icon)
        status, body = http_json(s.port, "POST", "/api/apps/install", {"source": src}, token=token, timeout=120)
        if status != 200:
            raise SystemExit(f"install {slug} failed: {status} {body}")
    for slug in slugs[::2]:
        git_fixture(sources, slug, "1.1.0", slug + " two", icon)

    def check():
        t0 = time.perf_counter()
        status, body = http_json(s.port, "POST", "/api/apps/updates/check", {"force": True}, token=token, timeout=120)
        elapsed = (time.perf_counter() - t0) * 1000
        assert status == 200 and body["checked"] == count and body["available"] == count // 2, (status, body)
        return elapsed
    checks = [gate.run(check) for _ in range(3 if QUICK else 5)]
    note("lifecycle", f"update check of {count} installed apps, 4 at a time (ms)", fmt3(checks), "≤ 2,000 ms")

    # Icons: every app's icon at every advertised size, rendered cold (8 requests at a time)
    # while another client times /api/health: the renders must not hold the async threads up.
    apps = http_json(s.port, "GET", "/api/apps", token=token)[1]
    paths = [f"/api/apps/{a['id']}/icon?size={size}{purpose}" for a in apps for size in (192, 512) for purpose in ("", "&purpose=maskable")]

    def health_samples(stop):
        out = []
        while not stop.is_set():
            t0 = time.perf_counter()
            http_get(s.port, "/api/health", timeout=5)
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.002)
        return out
    idle_stop = threading.Event()
    timer = threading.Timer(1.0, idle_stop.set)
    timer.start()
    idle = sorted(health_samples(idle_stop))
    busy_stop = threading.Event()
    renders = []

    def fetch_icon(path):
        t0 = time.perf_counter()
        status, body = http_get(s.port, path, timeout=30)
        assert status == 200 and body.startswith(b"\x89PNG"), (path, status)
        renders.append((time.perf_counter() - t0) * 1000)
    with concurrent.futures.ThreadPoolExecutor(max_workers=9) as pool:
        watcher = pool.submit(health_samples, busy_stop)
        list(pool.map(fetch_icon, paths))
        busy_stop.set()
        busy = sorted(watcher.result())
    renders.sort()
    pct = lambda xs, q: xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")
    note("lifecycle", f"{len(paths)} cold icon renders, 8 at a time: each p50 | p99 (ms)", f"{pct(renders, .5):.1f}  |  {pct(renders, .99):.1f}", "")
    note("lifecycle", "GET /api/health meanwhile, p50 | p99 ms (idle: p50 | p99)",
         f"{pct(busy, .5):.2f} | {pct(busy, .99):.2f}  (idle {pct(idle, .5):.2f} | {pct(idle, .99):.2f})", "p99 ≤ 10 ms")
    s.stop()


def section_frontend(binary):
    print("frontend", flush=True)
    env = dict(os.environ, MOBIUS_BIN=binary)
    out = subprocess.run(["node", os.path.join(ROOT, "frontend", "scripts", "bench.mjs")], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        note("frontend", "bench.mjs failed", out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "?", "")
        return
    for line in out.stdout.strip().splitlines():
        print("    " + line, flush=True)


# ---- review: reading a long turn on a phone (issue 37) ----

REVIEW_DIFF_LINES = 2000
REVIEW_PLAIN_TURNS = 10  # one page of the transcript (the PWA's PAGE_SIZE is 20 messages)
REVIEW_TOOL_KINDS = ("Read", "Grep", "Bash", "Read", "Glob", "Bash", "Read", "Bash", "Grep", "Edit")


def review_tools(rng, n, prefix, big_at=None):
    """`n` settled tool calls as the fold stores them (every tenth a one-line Edit, thinking every
    25 calls, one failure in 100); at `big_at`, an Edit of a REVIEW_DIFF_LINES-line file."""
    blocks = []
    for i in range(n):
        if i % 25 == 24:
            blocks.append({"type": "thinking", "content": words(rng, 240), "item_id": f"{prefix}-think-{i}"})
        tool = REVIEW_TOOL_KINDS[i % len(REVIEW_TOOL_KINDS)]
        block = {"type": "tool", "tool": tool, "tool_use_id": f"toolu_{prefix}_{i}", "status": "done",
                 "elapsed_ms": rng.randint(40, 2500)}
        if tool in ("Read", "Edit"):
            block["input"] = f"src/module{i % 97}/part{i}.ts"
            block["output"] = "\n".join(f"{k:>5}\t{words(rng, 60)}" for k in range(4))
        elif tool in ("Grep", "Glob"):
            block["input"] = f"{words(rng, 14)} in src/module{i % 97}"
            block["output"] = "\n".join(f"src/module{i % 97}/part{k}.ts" for k in range(3))
        else:
            block["input"] = f"npm test -- --filter part{i}"
            block["output"] = "\n".join(words(rng, 70) for _ in range(6))
            block["output_exit_code"] = 0
        if tool == "Edit":
            block["output"] = "The file has been updated."
            block["files"] = [{"path": block["input"], "change": "update", "added": 1, "removed": 1,
                               "diff": f" const a = {i};\n-const b = old({i});\n+const b = next({i});\n return b;\n"}]
        if i % 100 == 57:
            block["status"] = "error"
            block["output"] = "Error: exit status 1"
        if i == big_at:
            block["tool"] = "Edit"
            block["input"] = "apps/notes/src/big.ts"
            block["output"] = "The file has been updated."
            block["files"] = [review_big_diff(block["input"])]
        blocks.append(block)
    return blocks


def review_big_diff(path):
    """An edit of a REVIEW_DIFF_LINES-line TypeScript file changing every fifth line: nothing
    folds, so every line is a row (what the server's diff of such an Edit holds)."""
    lines, added, removed = [], 0, 0
    for i in range(REVIEW_DIFF_LINES):
        text = f'  const value{i} = compute({i}, "item {i}"); // step {i}'
        if i % 5 == 1:
            lines.append("-" + text)
            removed += 1
        elif i % 5 == 2:
            lines.append("+" + text.replace("compute", "computeFast"))
            added += 1
        else:
            lines.append(" " + text)
    return {"path": path, "change": "update", "added": added, "removed": removed, "diff": "\n".join(lines) + "\n"}


def review_plain_reply(rng, n):
    """A turn without edits: Markdown around a read and a command."""
    return {"role": "assistant", "blocks": [
        {"type": "text", "item_id": f"plain-{n}-a", "content":
            f"Here is what I found in part {n}.\n\n- The handler returns early on **empty input**.\n"
            f"- {words(rng, 80)}\n\n```ts\nexport function parse(input: string): number {{\n"
            f"  return input.trim() === \"\" ? 0 : Number(input);\n}}\n```"},
        {"type": "tool", "tool": "Read", "tool_use_id": f"toolu_plain_{n}_r", "input": f"src/part{n}.ts",
         "output": "\n".join(words(rng, 60) for _ in range(4)), "status": "done", "elapsed_ms": 120},
        {"type": "tool", "tool": "Bash", "tool_use_id": f"toolu_plain_{n}_b", "input": "npm test",
         "output": "\n".join(words(rng, 70) for _ in range(6)), "status": "done", "elapsed_ms": 4200,
         "output_exit_code": 0},
        {"type": "text", "item_id": f"plain-{n}-b", "content": f"The tests pass. {words(rng, 200)}"},
    ]}


def review_seed(port, token):
    """The chats the review benchmark opens, through the import API; returns their ids."""
    rng = random.Random(37)
    ids = {"review": "bench-review", "plain": "bench-review-plain", "start": "bench-review-start"}
    review = [
        {"role": "user", "content": "Run the whole migration, file by file"},
        {"role": "assistant", "blocks": review_tools(rng, 500, "a") + [
            {"type": "text", "item_id": "a-end", "content": "Migrated all 500 steps; two commands failed and were rerun."}]},
        {"role": "user", "content": "Now the big one, and tidy big.ts"},
        {"role": "assistant", "blocks": review_tools(rng, 2000, "b", big_at=1000) + [
            {"type": "text", "item_id": "b-end", "content": "Done: big.ts is tidied and every check passes."}]},
        {"role": "user", "content": "What does part 1 do?"},
        review_plain_reply(rng, 1),
    ]
    plain = []
    for n in range(REVIEW_PLAIN_TURNS):
        plain.append({"role": "user", "content": f"Question {n + 1}: could you look at part {n + 1}?"})
        plain.append(review_plain_reply(rng, n + 1))
    start = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hello! What shall we build?"}]
    for key, title, messages in (("review", "Review benchmark", review), ("plain", "Plain turns", plain), ("start", "Start", start)):
        status, body = http_json(port, "POST", "/api/chats", {"id": ids[key], "title": title, "messages": messages},
                                 token=token, timeout=120)
        assert status in (200, 201), (status, body)
    return ids


def section_review(binary, tmp):
    """Reviewing a long settled turn on a phone in headless Chromium at 4× CPU slowdown
    (frontend/scripts/bench-review.mjs); MOBIUS_BENCH_REVIEW_BASELINE: a PWA build (its dist/)
    from before the diff work, for the cost of a turn without edits beside it."""
    print("review", flush=True)
    servers = []
    try:
        s = Server(binary, tempfile.mkdtemp(dir=tmp))
        servers.append(s)
        s.wait()
        token = owner_token(s.port)
        ids = review_seed(s.port, token)
        env = dict(os.environ, MOBIUS_URL=f"http://127.0.0.1:{s.port}", MOBIUS_TOKEN=token,
                   MOBIUS_REVIEW_CHAT=ids["review"], MOBIUS_PLAIN_CHAT=ids["plain"], MOBIUS_START_CHAT=ids["start"],
                   MOBIUS_BENCH_RUNS="1" if QUICK else "3")
        base_dist = os.environ.get("MOBIUS_BENCH_REVIEW_BASELINE", "")
        if base_dist:
            b = Server(binary, tempfile.mkdtemp(dir=tmp), extra_env={"MOBIUS_FRONTEND_DIR": base_dist})
            servers.append(b)
            b.wait()
            base_token = owner_token(b.port)
            review_seed(b.port, base_token)
            env.update(MOBIUS_BASELINE_URL=f"http://127.0.0.1:{b.port}", MOBIUS_BASELINE_TOKEN=base_token)
        # Chromium is not pinned (as in the scale section's drawer): the target is a 4× slowed renderer.
        gate = Gate(s.proc.pid)
        out = gate.run(lambda: subprocess.run(["node", os.path.join(ROOT, "frontend", "scripts", "bench-review.mjs")],
                                              env=env, capture_output=True, text=True), attempts=2, limit=1.0)
        if out.returncode != 0:
            note("review", "bench-review.mjs failed", (out.stderr.strip().splitlines() or ["?"])[-1], "")
            return
        r = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for server in servers:
            server.stop()
    ms = lambda key: fmt3(r[key], "", 0)
    note("review", "open the chat (2,500 tool calls), navigation → painted (ms)", ms("chatOpen"), "")
    note("review", "settled 500-tool turn: tap its line → steps painted (ms)", ms("open500"), "≤ 200 ms")
    note("review", "  … → every step in the page, or windowed (ms)", ms("all500"), "")
    note("review", f"{REVIEW_DIFF_LINES:,}-line diff: tap the file → first rows painted (ms)", ms("diffFirst"), "≤ 50 ms")
    note("review", "  … → its first page (200 rows) painted | coloured (ms)", f"{ms('diffPage')} | {ms('diffColoured')}", "")
    note("review", f"  \"Show more\" until all {REVIEW_DIFF_LINES:,} lines painted (ms, summed)", ms("diffRest"), "")
    note("review", "settled 2,000-tool turn: tap its line → steps painted (ms)", ms("open2000"), "")
    note("review", "  … → every step in the page, or windowed (ms)", ms("all2000"), "")
    note("review", "  scrolling its steps, 3,000 px/s for 5 s (frames per second)", fmt3(r["scrollFps"], "", 1), "60 fps")
    note("review", "  frames late | longest gap (ms), worst run",
         f"{max(r['scrollLate'])} | {max(r['scrollLongest']):.0f}", "")
    note("review", "  an idle page's frame rate here (the most it can show)", fmt3(r["idleFps"], "", 1), "")
    plain = f"{fmt3(r['plain'], '', 0)} (main thread {fmt3(r['plainMain'], '', 0)})"
    note("review", f"open {REVIEW_PLAIN_TURNS} turns without edits in the app (ms)", plain, "no added cost")
    if r["baselinePlain"]:
        then = f"{fmt3(r['baselinePlain'], '', 0)} (main thread {fmt3(r['baselinePlainMain'], '', 0)})"
        change = statistics.median(r["plain"]) - statistics.median(r["baselinePlain"])
        note("review", "  the same with the baseline PWA (ms)", then, f"{change:+.0f} ms median")
    else:
        note("review", "  baseline PWA", "not measured: set MOBIUS_BENCH_REVIEW_BASELINE", "")


# ---- search ----

SEARCH_CHATS = 2000
SEARCH_MESSAGES_PER_CHAT = 50  # 100,000 messages


def search_vocab(rng, n=6000):
    """Pseudo-words with a Zipf-like frequency, so queries meet common and rare words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(n)})
    rng.shuffle(vocab)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    return vocab, weights


def search_text(rng, vocab, weights, chars):
    out, size = [], 0
    for w in rng.choices(vocab, weights, k=max(1, chars // 5)):
        out.append(w)
        size += len(w) + 1
        if size >= chars:
            break
    return " ".join(out)


def search_chat(rng, vocab, weights, c):
    ts = 1780000000000 + c * 10_000_000
    messages = []
    for i in range(SEARCH_MESSAGES_PER_CHAT):
        ts += rng.randint(1000, 60000)
        if i % 2 == 0:
            messages.append({"role": "user", "content": search_text(rng, vocab, weights, 160), "ts": ts})
        else:
            text = search_text(rng, vocab, weights, 600)
            messages.append({"role": "assistant", "ts": ts, "blocks": [
                {"type": "text", "content": text},
                {"type": "tool", "tool": "Bash", "tool_use_id": f"toolu_{c:05d}_{i:03d}",
                 "input": "ls -la /data/apps/" + search_text(rng, vocab, weights, 20),
                 "output": search_text(rng, vocab, weights, 400), "status": "done"},
            ]})
    return {"id": f"s{c:05d}", "title": search_text(rng, vocab, weights, 30), "messages": messages}


def search_populate(port, token):
    """Imports the 2,000 chats; answers the writer's throughput in messages/s."""
    rng = random.Random(20)
    vocab, weights = search_vocab(rng)
    chats = [search_chat(rng, vocab, weights, c) for c in range(SEARCH_CHATS)]
    started = time.perf_counter()
    for chat in chats:
        status, _ = http_json(port, "POST", "/api/chats", chat, token=token, timeout=60)
        assert status in (200, 201), status
    secs = time.perf_counter() - started
    return SEARCH_CHATS * SEARCH_MESSAGES_PER_CHAT / secs, vocab


def search_latencies(port, token, queries, rounds):
    from urllib.parse import quote
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Authorization": "Bearer " + token}
    out = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            conn.request("GET", "/api/chats/search?q=" + quote(q), headers=headers)
            r = conn.getresponse()
            r.read()
            out.append((time.perf_counter() - t0) * 1000)
            assert r.status == 200, r.status
    conn.close()
    return out


def pct(values, p):
    vals = sorted(values)
    return vals[min(len(vals) - 1, int(round(p / 100 * (len(vals) - 1))))]


def search_index_share(db_path, tmp):
    """Bytes the search tables add, as a share of the database without them (both vacuumed)."""
    import sqlite3
    with_index = os.path.join(tmp, "with.sqlite3")
    without = os.path.join(tmp, "without.sqlite3")
    src = sqlite3.connect(db_path)
    src.execute(f"VACUUM INTO '{with_index}'")
    src.close()
    shutil.copy(with_index, without)
    c = sqlite3.connect(without)
    c.execute("DROP TABLE chat_search")
    c.execute("DROP TABLE chat_search_docs")
    c.commit()
    c.execute("VACUUM")
    c.close()
    a, b = os.path.getsize(with_index), os.path.getsize(without)
    return a, b


def search_server_run(binary, tmp, label, measure_search):
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    rate, vocab = search_populate(s.port, token)
    note("search", f"{label}: import 100,000 msgs in 2,000 chats (msgs/s)", f"{rate:,.0f}", "")
    gate = Gate(s.proc.pid)
    duration = 3 if QUICK else 10
    path = "/api/chats/s01000?limit=20"
    url = f"http://127.0.0.1:{s.port}{path}"
    wrk(url, 32, 1 if QUICK else 3, token)
    detail = [gate.run(lambda: wrk(url, 32, duration, token)) for _ in range(1 if QUICK else 3)]
    note("search", f"{label}: GET /api/chats/{{id}}?limit=20 c=32 requests/s", fmt3([r[0] for r in detail], "", 0), "")
    if measure_search:
        # Common, middling and rare words (by rank), as typed (prefix), two words, a phrase,
        # one or two letters as typed, hostile text, and a word that is nowhere.
        common, middle, rare = vocab[0], vocab[200], vocab[4000]
        kinds = {
            "common word": [common + " "],
            "middling word": [middle + " "],
            "rare word": [rare + " "],
            "prefix as typed (3 letters)": [middle[:3], rare[:3], common[:3]],
            "one or two letters (whole words only)": ["a", "e", "s", middle[:2], common[:2]],
            "two words (common + rare)": [f"{common} {rare} "],
            "two common words": [f"{vocab[0]} {vocab[1]} "],
            "phrase": [f'"{vocab[0]} {vocab[1]}"'],
            "hostile": ['NEAR( "x * -y AND (', '\\' + '"' * 30],
            "no match": ["zzzzzzzzzzz "],
        }
        rounds = 20 if QUICK else 100
        everything = []
        for kind, queries in kinds.items():
            gate.wait_quiet()
            lat = search_latencies(s.port, token, queries, rounds)
            everything += lat
            note("search", f"search p50 | p99 ms: {kind}", f"{pct(lat, 50):.2f}  |  {pct(lat, 99):.2f}", "")
        note("search", "search p99 ms, all queries above", f"{pct(everything, 99):.2f}", "≤ 10 ms")
        s.stop()
        a, b = search_index_share(os.path.join(d, "db", "mobius.sqlite3"), tmp)
        note("search", "database without | with the index (MiB, vacuumed)", f"{b / 2**20:.1f}  |  {a / 2**20:.1f}", "")
        note("search", "the index adds (% of the database without it)", f"{(a - b) / b * 100:.1f} %", "≤ 60 %")
    else:
        s.stop()
    return rate, detail


def section_search(binary, tmp, baseline):
    print("search", flush=True)
    rate, detail = search_server_run(binary, tmp, "indexed", True)
    if baseline:
        base_rate, base_detail = search_server_run(baseline, tmp, "baseline", False)
        note("search", "import throughput change vs the baseline", f"{(rate / base_rate - 1) * 100:+.1f} %", "≥ −10 %")
        med = statistics.median(r[0] for r in detail)
        base_med = statistics.median(r[0] for r in base_detail)
        note("search", "chat detail requests/s change vs the baseline", f"{(med / base_med - 1) * 100:+.1f} %", "≥ −10 %")


def section_sandbox(tmp):
    print("sandbox", flush=True)
    exe = example("sandbox_cost")
    out = subprocess.run(["taskset", "-c", "0", exe], capture_output=True, text=True, check=True,
                         env=dict(os.environ, MOBIUS_BIN=binary)).stdout
    rows = {}
    for line in out.splitlines():
        r = json.loads(line)
        if r["mode"] == "unavailable":
            note("sandbox", "turn start: the kernel has no Landlock", r["reason"], "")
            return
        rows[r["mode"]] = r  # the second round of each mode (warm)
    note("sandbox", "CLI spawn to exit, no sandbox: p50 | p99 ms",
         f"{rows['none']['p50_ms']:.2f}  |  {rows['none']['p99_ms']:.2f}", "")
    note("sandbox", f"CLI spawn to exit, Landlock ABI {rows['landlock']['abi']}: p50 | p99 ms",
         f"{rows['landlock']['p50_ms']:.2f}  |  {rows['landlock']['p99_ms']:.2f}", "")
    note("sandbox", "turn start added by the sandbox (p50, ms)",
         f"{rows['landlock']['p50_ms'] - rows['none']['p50_ms']:.2f}", "≤ 10 ms")
    note("sandbox", "a tree's end, group kill + /proc sweep for its label: p50 | p99 ms (no tree: p50)",
         f"{rows['landlock']['end_p50_ms']:.2f}  |  {rows['landlock']['end_p99_ms']:.2f}  ({rows['none']['end_p50_ms']:.2f})", "")


def section_jobs(tmp):
    """An app job's start and end as the platform adds them: the run's token, its view of the data
    directory (token file, links, cron-logs/), the job sandbox, the labelled tree, the view read back
    and removed; against the same script spawned bare."""
    print("jobs", flush=True)
    exe = example("job_start_cost")
    out = subprocess.run(["taskset", "-c", "0", exe], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        r = json.loads(line)
        rows[r["mode"]] = r  # the second round of each mode (warm)
    note("jobs", "no-op job spawn to exit, bare: p50 | p99 ms",
         f"{rows['bare']['p50_ms']:.2f}  |  {rows['bare']['p99_ms']:.2f}", "")
    sandboxed = "Landlock" if rows["job"]["sandbox"] else "no sandbox on this kernel"
    note("jobs", f"no-op job spawn to exit, as the scheduler runs it ({sandboxed}): p50 | p99 ms",
         f"{rows['job']['p50_ms']:.2f}  |  {rows['job']['p99_ms']:.2f}", "")
    note("jobs", "the run's view (token file, links, cron-logs/) made: p50 | p99 ms",
         f"{rows['job']['view_p50_ms']:.2f}  |  {rows['job']['view_p99_ms']:.2f}", "")
    note("jobs", "a job's added start cost (p50, ms)",
         f"{rows['job']['p50_ms'] - rows['bare']['p50_ms']:.2f}", "≤ 50 ms")
    note("jobs", "a job's end (group kill, /proc sweep, cron-logs read, view removed): p50 | p99 ms (bare: p50)",
         f"{rows['job']['end_p50_ms']:.2f}  |  {rows['job']['end_p99_ms']:.2f}  ({rows['bare']['end_p50_ms']:.2f})", "")


UPLOAD_BYTES = 20 * 1024 * 1024
UPLOAD_BOUNDARY = "mobius-bench-boundary"


def upload_round(port, token, body, pid):
    """POSTs one multipart upload while sampling the server's RSS every 2 ms; answers
    (seconds, peak RSS growth in MiB, stored name)."""
    def rss():
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    before = rss()
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": "Bearer " + token, "Content-Type": f"multipart/form-data; boundary={UPLOAD_BOUNDARY}",
               "Content-Length": str(len(body))}
    started = time.perf_counter()
    conn.request("POST", "/api/chats/bench/uploads", body=body, headers=headers)
    r = conn.getresponse()
    raw = r.read()
    elapsed = time.perf_counter() - started
    conn.close()
    done.set()
    sampler.join()
    if r.status != 200:
        raise SystemExit(f"upload answered {r.status}: {raw[:200]!r}")
    return elapsed, peak[0] - before, json.loads(raw)[0]["name"]


def section_uploads(binary, tmp):
    """A 20 MiB attachment over loopback (throughput, and how much the server's RSS grows while
    it streams to disk), and the image step of a 12-megapixel photo (bench example)."""
    print("uploads", flush=True)
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    http_json(s.port, "POST", "/api/chats", {"id": "bench"}, token)
    payload = b"%PDF-1.7\n" + random.Random(7).randbytes(UPLOAD_BYTES - 9)
    body = (f"--{UPLOAD_BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode() + payload + f"\r\n--{UPLOAD_BOUNDARY}--\r\n".encode()
    gate = Gate(s.proc.pid)
    upload_round(s.port, token, body, s.proc.pid)  # warm-up (first file, folders), unrecorded
    rates, growth = [], []
    for _ in range(1 if QUICK else 3):
        secs, grew, name = gate.run(lambda: upload_round(s.port, token, body, s.proc.pid))
        rates.append(UPLOAD_BYTES / secs / 1e6)
        growth.append(grew)
        http_json(s.port, "DELETE", f"/api/chats/bench/uploads/{name}", None, token)
    note("uploads", "20 MiB upload over loopback (MB/s)", fmt3(rates, "", 0), "≥ 200 MB/s")
    note("uploads", "server RSS growth during it (MiB)", fmt3(growth, "", 2), "< 2 MiB")
    s.stop()
    exe = example("preview_cost")
    r = json.loads(subprocess.run(["taskset", "-c", "0", exe], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    note("uploads", f"{r['megapixels']:.0f}-MP JPEG ({r['jpeg_mib']:.1f} MiB): strip + preview, ms",
         fmt3(r["inline_ms"], "", 0), "≤ 150 ms")
    note("uploads", "the same on a blocking thread (as a request runs it), ms", fmt3(r["blocking_ms"], "", 0), "≤ 150 ms")


FLOOD_CLI = r"""#!/bin/sh
IFS= read -r init
IFS= read -r user
chunk=$(printf '%01000d' 0)
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s1"}\n'
i=0
while [ $i -lt LINES ]; do
  printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}},"session_id":"s1"}\n' "$chunk"
  i=$((i+1))
done
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}\n'
cat >/dev/null
"""


def db_bytes(d):
    return sum(os.path.getsize(os.path.join(d, "db", f)) for f in os.listdir(os.path.join(d, "db")))


def section_flood(binary, tmp):
    """One turn whose model prints 100 MB of text (100,000 deltas of 1,000 bytes)."""
    print("flood", flush=True)
    lines = 10_000 if QUICK else 100_000
    bindir = os.path.join(tmp, "flood-bin")
    os.makedirs(bindir, exist_ok=True)
    cli = os.path.join(bindir, "claude")
    with open(cli, "w") as f:
        f.write(FLOOD_CLI.replace("LINES", str(lines)))
    os.chmod(cli, 0o755)
    d = os.path.join(tmp, "flood")
    s = Server(binary, d, {"MOBIUS_CLAUDE_BIN": cli})
    s.wait()
    token = owner_token(s.port)
    http_json(s.port, "POST", "/api/providers/claude/api-key", {"api_key": "sk-bench"}, token)
    http_json(s.port, "POST", "/api/chats", {"id": "flood"}, token)
    base_rss, base_db = s.rss_mib(), db_bytes(d)
    started = time.perf_counter()
    status, body = http_json(s.port, "POST", "/api/chats/flood/messages", {"content": "flood", "cid": "f1"}, token)
    assert status == 202, body
    peak = base_rss
    while True:
        peak = max(peak, s.hwm_mib())
        _, detail = http_json(s.port, "GET", "/api/chats/flood?limit=1", None, token)
        if not detail.get("running"):
            break
        time.sleep(0.2)
    took = time.perf_counter() - started
    http_json(s.port, "GET", "/api/chats/flood", None, token)
    peak = max(peak, s.hwm_mib())
    grown = db_bytes(d) - base_db
    size = lines * 1000 / 1e6
    note("flood", f"{size:.0f} MB of model text in one turn: server peak RSS (MiB)", f"{peak:.1f} (idle {base_rss:.1f})", "< 64 MiB")
    note("flood", "database growth (MiB, with WAL)", f"{grown / 2**20:.2f}", "a few MiB")
    note("flood", "the turn took (s)", f"{took:.1f}", "")
    s.stop()


# ---- scale: costs as an owner's history grows (issue 14) ----

# MOBIUS_BENCH_SCALE_SIZES=200,10000 runs fewer (a baseline whose list is not paged takes
# seconds per request at 100,000 chats).
SCALE_SIZES = tuple(int(n) for n in os.environ.get("MOBIUS_BENCH_SCALE_SIZES", "200,10000,100000").split(","))
SCALE_HUGE_MESSAGES = 200_000
SCALE_IMPORT_MESSAGES = 20_000
SCALE_ROUNDS = 100


def scale_templates(port, token):
    """A user and an assistant message body as this build stores them (copied into bulk rows)."""
    status, _ = http_json(port, "POST", "/api/chats", {"id": "template", "title": "Template", "messages": [
        {"role": "user", "content": "hello there, how is the build going", "ts": 1780000000000},
        {"role": "assistant", "ts": 1780000000001, "blocks": [{"type": "text", "content": "It builds and the tests pass."}]},
    ]}, token=token)
    assert status in (200, 201), status


def scale_fill(db_path, chats, huge):
    """Adds `chats` chats of one message each (five of them pinned) and, with `huge`, a chat of
    SCALE_HUGE_MESSAGES messages, straight into the database while the server is stopped."""
    import sqlite3
    c = sqlite3.connect(db_path)
    user_body, assistant_body = [r[0] for r in c.execute(
        "SELECT body FROM chat_messages WHERE chat_id = 'template' ORDER BY idx")]
    base = 1780000000000
    rows = []
    msgs = []
    for i in range(chats - 1):
        cid = f"scale-{i:06d}"
        at = base + i * 1000
        pinned = base + i if i % (chats // 5) == 0 else None
        rows.append((cid, f"Scale chat {i}", at, at, at, 1, pinned))
        msgs.append((cid, 0, "user", None, at, user_body))
    c.executemany("INSERT INTO chats (id, title, created_at, updated_at, activity_at, message_count, pinned_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    c.executemany("INSERT INTO chat_messages (chat_id, idx, role, cid, ts, body) VALUES (?, ?, ?, ?, ?, ?)", msgs)
    if huge:
        c.execute("INSERT INTO chats (id, title, created_at, updated_at, activity_at, message_count) "
                  "VALUES ('huge', 'Huge chat', ?, ?, ?, ?)", (base, base, base, SCALE_HUGE_MESSAGES))
        c.executemany("INSERT INTO chat_messages (chat_id, idx, role, cid, ts, body) VALUES ('huge', ?, ?, NULL, ?, ?)",
                      ((i, "user" if i % 2 == 0 else "assistant", base + i,
                        user_body if i % 2 == 0 else assistant_body) for i in range(SCALE_HUGE_MESSAGES)))
    c.commit()
    c.close()


def timed_requests(port, token, rounds, request, between=None):
    """Median ms of `request(conn)` over `rounds`, calling `between(conn)` (untimed) before each."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    out = []
    for i in range(rounds):
        if between:
            between(conn, headers, i)
        t0 = time.perf_counter()
        status = request(conn, headers, i)
        out.append((time.perf_counter() - t0) * 1000)
        assert status in (200, 201), status
    conn.close()
    return statistics.median(out)


def send(conn, headers, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    r = conn.getresponse()
    r.read()
    return r.status


def rename(conn, headers, i):
    """A write the chat list shows: the response cache cannot answer the next read."""
    send(conn, headers, "PATCH", "/api/chats/template", {"title": f"Template {i}"})


def scale_server(binary, tmp, chats, huge=False):
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    scale_templates(s.port, token)
    s.stop()
    scale_fill(os.path.join(d, "db", "mobius.sqlite3"), chats, huge)
    s = Server(binary, d)
    s.wait()
    return s, d, owner_token(s.port)


def dir_bytes(d):
    total = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def scale_import(port, token, n, cid):
    rng = random.Random(n)
    ts = 1780000000000
    messages = []
    for i in range(n):
        ts += 1000
        text = words(rng, 300)
        if i % 2 == 0:
            messages.append({"role": "user", "content": text, "ts": ts})
        else:
            messages.append({"role": "assistant", "ts": ts, "blocks": [
                {"type": "text", "content": text},
                {"type": "tool", "tool": "Bash", "tool_use_id": f"toolu_{cid}_{i}", "input": "ls -la",
                 "output": words(rng, 400), "status": "done"}]})
    body = json.dumps({"id": cid, "title": "Imported", "messages": messages})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    conn.request("POST", "/api/chats", body=body, headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    ms = (time.perf_counter() - t0) * 1000
    conn.close()
    assert r.status in (200, 201), r.status
    return ms, len(body)


def section_scale(binary, tmp):
    print("scale", flush=True)
    runs = 1 if QUICK else 3
    rounds = 20 if QUICK else SCALE_ROUNDS
    for chats in SCALE_SIZES:
        s, d, token = scale_server(binary, tmp, chats, huge=chats == 10_000)
        gate = Gate(s.proc.pid)
        label = f"{chats:,} chats"
        create = [gate.run(lambda: timed_requests(s.port, token, rounds, lambda c, h, i: send(
            c, h, "POST", "/api/chats", {"title": f"New {time.perf_counter_ns()}"}))) for _ in range(runs)]
        note("scale", f"{label}: create a chat, sequential (median ms)", fmt3(create, "", 2), "≤ 2 ms")
        first = [gate.run(lambda: timed_requests(s.port, token, rounds, lambda c, h, i: send(
            c, h, "GET", "/api/chats?limit=50"), between=rename)) for _ in range(runs)]
        note("scale", f"{label}: first page of the list (50), uncached (median ms)", fmt3(first, "", 2), "≤ 2 ms")
        _, body = http_get(s.port, "/api/chats", token, timeout=30)
        note("scale", f"{label}: GET /api/chats without limit (bytes)", f"{len(body):,}", "bounded")
        load(s, gate, "scale", "/api/chats?limit=50", token, targets={32: "≥ 20,000|"}, conns=(32,))
        if chats == 10_000:
            newest = [gate.run(lambda: timed_requests(s.port, token, rounds, lambda c, h, i: send(
                c, h, "GET", "/api/chats/huge?limit=20"), between=rename)) for _ in range(runs)]
            note("scale", f"{label}: newest page of a {SCALE_HUGE_MESSAGES:,}-message chat, uncached (ms)", fmt3(newest, "", 2), "≤ 2 ms")
            oldest = [gate.run(lambda: timed_requests(s.port, token, rounds, lambda c, h, i: send(
                c, h, "GET", "/api/chats/huge?limit=20&before=20"), between=rename)) for _ in range(runs)]
            note("scale", f"{label}: oldest page of that chat, uncached (ms)", fmt3(oldest, "", 2), "")
            imports = []
            for r in range(runs):
                gate.wait_quiet()
                ms, size = scale_import(s.port, token, 2000, f"import2k-{r}")
                imports.append(ms)
            note("scale", "import a 2,000-message chat (ms per POST)", fmt3(imports, "", 1), "≤ 40 ms")
            time.sleep(10)
            idle = s.rss_mib()
            db_file = os.path.join(d, "db", "mobius.sqlite3")
            db_before = os.path.getsize(db_file)
            ms, size = scale_import(s.port, token, SCALE_IMPORT_MESSAGES, "import20k")
            peak = s.rss_mib()
            time.sleep(10)
            after = s.rss_mib()
            note("scale", f"import a {SCALE_IMPORT_MESSAGES:,}-message chat ({size / 2**20:.1f} MiB body, ms)", f"{ms:.0f}", "")
            note("scale", "RSS idle | right after that import | 10 s later (MiB)", f"{idle:.1f} | {peak:.1f} | {after:.1f}",
                 f"≤ idle + 4 MiB ({after - idle:+.1f})")
            note("scale", "threads after the loads (blocking pool bounded)", s.status().get("Threads", "?"), "")
            wal = os.path.join(d, "db", "mobius.sqlite3-wal")
            time.sleep(3)
            note("scale", "WAL file 3 s after the last write (bytes)", f"{os.path.getsize(wal) if os.path.exists(wal) else 0:,}", "0 (truncated when idle)")
            grown = os.path.getsize(db_file) - db_before
            note("scale", f"database growth per imported message, search index included (bytes)", f"{grown / SCALE_IMPORT_MESSAGES:,.0f}", "")
            note("scale", "data directory in all (MiB)", f"{dir_bytes(d) / 2**20:,.1f}", "")
            drawer = scale_drawer(s.port, token)
            note("scale", "PWA: drawer with 10,000 chats, time to interactive (ms, 4x CPU slowdown)", drawer, "≤ 1,000 ms")
        s.stop()


def scale_drawer(port, token):
    env = dict(os.environ, MOBIUS_URL=f"http://127.0.0.1:{port}", MOBIUS_TOKEN=token)
    # Chromium is not pinned (as in appdoc): the target is a 4× slowed renderer, and confining the
    # browser, GPU and network processes to one core as well doubled the figure (2.1 s against
    # 0.97 s here), with 1 chat as with 10,000 — it measured the core, not the drawer.
    out = subprocess.run(["node", os.path.join(ROOT, "frontend", "scripts", "bench-drawer.mjs")],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return out.stdout.strip().splitlines()[-1]


# ---- agents: send to first token, cold and warm ----

AGENT_TURNS = 8
def start_mock(kind, d):
    """A scripted model server that answers every request at once with a short text."""
    os.makedirs(d, exist_ok=True)
    script = os.path.join(d, "script.json")
    with open(script, "w") as f:
        json.dump({"default": {"text": "Right away."}, "steps": []}, f)
    port_file = os.path.join(d, "port")
    name = {"claude": "mock_anthropic.py", "codex": "mock_openai.py"}[kind]
    proc = subprocess.Popen(["taskset", "-c", "1", "python3", os.path.join(ROOT, "tests", "fake-providers", name),
                             "--port", "0", "--port-file", port_file, "--script", script],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, int(open(port_file).read().strip())
        time.sleep(0.02)
    raise SystemExit("the mock model server never started")


class ChatStream:
    """The chat's SSE stream, read on a thread: (arrival time, event) pairs."""

    def __init__(self, port, token, chat):
        import queue
        self.events = queue.Queue()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self.conn.request("GET", f"/api/chats/{chat}/stream", headers={"Authorization": f"Bearer {token}"})
        self.resp = self.conn.getresponse()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            for raw in self.resp:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("data:"):
                    self.events.put((time.perf_counter(), json.loads(line[5:])))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            # AttributeError: the response was closed under the read (http.client drops its file).
            pass

    def until(self, kind, timeout=120):
        end = time.perf_counter() + timeout
        while True:
            at, ev = self.events.get(timeout=max(0.1, end - time.perf_counter()))
            if ev.get("type") == kind:
                return at, ev

    def close(self):
        self.conn.close()


def timed_turn(port, token, chat, stream, n):
    """Send → run_started → first text: seconds from the send, and the turn's end status."""
    start = time.perf_counter()
    status, body = http_json(port, "POST", f"/api/chats/{chat}/messages", {"content": f"question {n}", "cid": f"b{n}"}, token)
    if status != 202:
        raise SystemExit(f"send failed: {status} {body}")
    started, first = None, None
    while True:
        at, ev = stream.events.get(timeout=120)
        kind = ev.get("type")
        if kind == "run_started" and started is None:
            started = at
        if kind in ("text", "text_final") and first is None:
            first = at
        if kind == "done":
            return (started - start) * 1000, (first - start) * 1000, ev.get("status")


def group_rss_mib(pgid):
    """RSS of every process in a process group, MiB."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[2]) != pgid:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


def agents_run(binary, tmp, kind, warm):
    d = os.path.join(tmp, f"agents-{kind}-{'warm' if warm else 'cold'}")
    os.makedirs(d, exist_ok=True)
    mock, mport = start_mock(kind, os.path.join(d, "mock"))
    cli_dir = os.environ.get("MOBIUS_CLI_DIR", "/var/cache/mobius-agent-clis")
    env = {
        "MOBIUS_AGENT_WARM_MAX": "3" if warm else "0",
        "MOBIUS_CLAUDE_BIN": os.path.join(cli_dir, "node_modules", ".bin", "claude"),
        "MOBIUS_CODEX_BIN": os.path.join(cli_dir, "node_modules", ".bin", "codex"),
        "MOBIUS_CLAUDE_BASE_URL": f"http://127.0.0.1:{mport}",
        "MOBIUS_ANTHROPIC_API_URL": f"http://127.0.0.1:{mport}",
        "MOBIUS_OPENAI_API_URL": f"http://127.0.0.1:{mport}/v1",
        "MOBIUS_CODEX_BASE_URL": f"http://127.0.0.1:{mport}/v1",
        "MOBIUS_NOTE_IDLE_SECS": "3600",
    }
    s = Server(binary, d, env, cpu=None)
    try:
        s.wait()
        token = owner_token(s.port)
        status, body = http_json(s.port, "POST", f"/api/providers/{kind}/api-key", {"api_key": "sk-bench-key"}, token)
        if status != 200:
            raise SystemExit(f"connecting {kind}: {status} {body}")
        # Codex on gpt-5.5 (the owner's default): the scripted server speaks that model's tools.
        http_json(s.port, "POST", "/api/settings", {"default_provider": kind,
                  "agent_defaults": {"claude": {}, "codex": {"model": "gpt-5.5"}}}, token)
        time.sleep(1)
        idle_before = s.rss_mib()
        http_json(s.port, "POST", "/api/chats", {"id": "bench"}, token)
        stream = ChatStream(s.port, token, "bench")
        first = timed_turn(s.port, token, "bench", stream, 0)  # a new chat: cold either way
        rows = [timed_turn(s.port, token, "bench", stream, n) for n in range(1, 1 + (3 if QUICK else AGENT_TURNS))]
        stream.close()
        time.sleep(1)
        groups = [int(g) for g in os.listdir(os.path.join(d, "run", "agents"))] if os.path.isdir(os.path.join(d, "run", "agents")) else []
        warm_rss = [group_rss_mib(g) for g in groups]
        idle_after = s.rss_mib()
        return first, rows, warm_rss, idle_before, idle_after
    finally:
        s.stop()
        mock.kill()


def section_agents(binary, tmp):
    print("agents", flush=True)
    idle = {}
    for kind in ("claude", "codex"):
        for warm in (False, True):
            label = "warm" if warm else "cold"
            first, rows, warm_rss, before, after = agents_run(binary, tmp, kind, warm)
            bad = [r for r in rows + [first] if r[2] != "completed"]
            if bad:
                note("agents", f"{kind} {label}: turns that did not complete", str(len(bad)), "must be 0")
            if warm:
                note("agents", f"{kind} new chat (cold): send → run_started | first text (ms)", f"{first[0]:.0f}  |  {first[1]:.0f}", "")
            note("agents", f"{kind} {label} (resume): send → run_started (ms)", fmt3([r[0] for r in rows], "", 0), "")
            note("agents", f"{kind} {label} (resume): send → first text (ms)", fmt3([r[1] for r in rows], "", 0),
                 "≤ 100 ms" if warm else "")
            if warm:
                note("agents", f"{kind} kept process: RSS of its group (MiB)", ", ".join(f"{r:.0f}" for r in warm_rss) or "none", "")
            idle[(kind, label)] = after
            note("agents", f"{kind} {label}: server RSS idle before | after the turns (MiB)", f"{before:.1f}  |  {after:.1f}", "")
        note("agents", f"{kind}: server RSS after the turns, warm − cold (MiB)", f"{idle[(kind, 'warm')] - idle[(kind, 'cold')]:+.1f}", "≈ 0 (unchanged)")


# ---- updates: apply and rollback through `mobius launch`, sizes ----

def minisign_key(tmp):
    key, pub = os.path.join(tmp, "bench.key"), os.path.join(tmp, "bench.pub")
    subprocess.run(["minisign", "-G", "-W", "-f", "-p", pub, "-s", key], check=True, capture_output=True)
    return key, open(pub).read()


def publish_release(root, key, version, binary_bytes):
    """Release `version` under root/<version>/ (binary, PWA bundle, release.json, signed
    SHA256SUMS) and root/latest.json pointing at it, as scripts/release lays them out."""
    import gzip, hashlib, io, tarfile
    d = os.path.join(root, version)
    os.makedirs(d, exist_ok=True)
    arch = os.uname().machine
    asset = f"mobius-{arch}-linux.gz"
    gz = gzip.compress(binary_bytes, compresslevel=1, mtime=0)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(os.path.join(ROOT, "frontend", "dist"), arcname="frontend/dist")
        tar.add(os.path.join(ROOT, "skill"), arcname="skill")
    bundle = buf.getvalue()
    info = json.loads(subprocess.run([BINARY, "release-info"], capture_output=True, text=True, check=True).stdout)
    manifest = json.dumps({
        "format": 1, "version": version, "build_sha": "bench", "published_at": "2026-12-01",
        "image_key": info["image_key"],
        "binaries": {arch: {"asset": asset, "sha256": hashlib.sha256(binary_bytes).hexdigest(), "bytes": len(binary_bytes)}},
        "pwa": {"asset": "mobius-pwa.tar.gz"}, "notes": f"Bench release {version}.",
    }).encode()
    files = {asset: gz, "mobius-pwa.tar.gz": bundle, "release.json": manifest}
    sums = "".join(f"{hashlib.sha256(b).hexdigest()}  {n}\n" for n, b in sorted(files.items()))
    for name, data in list(files.items()) + [("SHA256SUMS", sums.encode())]:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    subprocess.run(["minisign", "-S", "-s", key, "-m", os.path.join(d, "SHA256SUMS"), "-t", f"mobius {version}"],
                   check=True, capture_output=True, input=b"\n")
    feed = {"format": 1, "version": version, "published_at": "2026-12-01", "notes": "", "base_url": f"{version}/",
            "assets": {asset: len(gz), "mobius-pwa.tar.gz": len(bundle)}}
    with open(os.path.join(root, "latest.json"), "w") as f:
        json.dump(feed, f)


def serve_dir(root):
    import functools
    import http.server
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=root)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def release_state(data_dir):
    try:
        with open(os.path.join(data_dir, "platform", "releases", "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def section_updates(binary, tmp):
    if not shutil.which("minisign"):
        note("updates", "apply / rollback", "skipped: minisign is not installed")
        return
    base = tmp + "/updates"
    os.makedirs(base, exist_ok=True)
    key, pub = minisign_key(base)
    feed_root = base + "/feed"
    os.makedirs(feed_root)
    httpd = serve_dir(feed_root)
    feed = f"http://127.0.0.1:{httpd.server_address[1]}/latest.json"
    binary_bytes = open(binary, "rb").read()
    applied, rolled, walls = [], [], []
    runs = 1 if QUICK else 3
    for run in range(runs):
        data_dir = f"{base}/data-{run}"
        os.makedirs(data_dir)
        port = free_port()
        env = dict(os.environ)
        env.update({
            "DATA_DIR": data_dir, "MOBIUS_BIND": f"127.0.0.1:{port}", "MOBIUS_LOG": "warn",
            "MOBIUS_FRONTEND_DIR": os.path.join(ROOT, "frontend", "dist"), "MOBIUS_SKILL_DIR": os.path.join(ROOT, "skill"),
            "MOBIUS_UPDATE_FEED": feed, "MOBIUS_UPDATE_TEST_KEY": pub, "MOBIUS_UPDATE_READY_TIMEOUT_SECS": "60",
        })
        proc = subprocess.Popen([binary, "launch"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: http_get(port, "/api/ready")[0] == 200, 60)
            token = owner_token(port)
            populate_small(port, token, 200)
            # A good release: the time from the restart being asked to the new version ready,
            # as the launcher measures it (the download, from loopback, is not in it).
            publish_release(feed_root, key, f"0.{run + 90}.0", binary_bytes)
            t0 = time.perf_counter()
            status, _ = http_json(port, "POST", "/api/platform/update", {"version": f"0.{run + 90}.0"}, token=token)
            assert status == 202, status
            wait_for(lambda: (release_state(data_dir).get("last") or {}).get("version") == f"0.{run + 90}.0", 120)
            wait_for(lambda: http_get(port, "/api/ready")[0] == 200, 60)
            walls.append(time.perf_counter() - t0)
            last = release_state(data_dir)["last"]
            assert last["outcome"] == "applied", last
            applied.append(last["took_ms"] / 1000)
            # A release that crashes at start: until the previous version answers ready again.
            crash = b"#!/bin/sh\necho 'bench: this build cannot start' >&2\nexit 3\n"
            publish_release(feed_root, key, f"0.{run + 90}.1", crash)
            t0 = time.perf_counter()
            status, _ = http_json(port, "POST", "/api/platform/update", {"version": f"0.{run + 90}.1"}, token=token)
            assert status == 202, status
            wait_for(lambda: (release_state(data_dir).get("last") or {}).get("version") == f"0.{run + 90}.1", 120)
            wait_for(lambda: http_get(port, "/api/ready")[0] == 200, 60)
            rolled.append(time.perf_counter() - t0)
            assert release_state(data_dir)["last"]["outcome"] == "rolled_back"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    httpd.shutdown()
    note("updates", "apply → new version ready (restart asked → ready; 200 chats)", fmt3(applied, " s", 2), "≤ 10 s")
    note("updates", "apply from the route → ready (with a loopback download)", fmt3(walls, " s", 2))
    note("updates", "crashing release → rolled back, previous version ready", fmt3(rolled, " s", 2), "≤ 10 s")
    size = os.path.getsize(binary)
    import gzip
    gz = len(gzip.compress(open(binary, "rb").read(), compresslevel=9, mtime=0))
    note("updates", f"binary size ({os.uname().machine})", f"{size / 1048576:.1f} MiB (gzip {gz / 1048576:.1f} MiB)")
    note("updates", "binary size (other architecture), image size", "not measurable here: scripts/release sizes in the release workflow")


def wait_for(predicate, timeout):
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        try:
            if predicate():
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise SystemExit("updates: timed out waiting")


# ---- regressions: this build against an earlier one, interleaved in one run ----

def import_body(n, cid, marker=None):
    """The 2,000-message import of the scale section: a ~1.6 MB transcript (`marker`: a word
    its last user message ends with, to find it by)."""
    rng = random.Random(n)
    ts = 1780000000000
    messages = []
    for i in range(n):
        ts += 1000
        text = words(rng, 300)
        if marker and i == n - 2:
            text += " " + marker
        if i % 2 == 0:
            messages.append({"role": "user", "content": text, "ts": ts})
        else:
            messages.append({"role": "assistant", "ts": ts, "blocks": [
                {"type": "text", "content": text},
                {"type": "tool", "tool": "Bash", "tool_use_id": f"toolu_{cid}_{i}", "input": "ls -la",
                 "output": words(rng, 400), "status": "done"}]})
    return json.dumps({"id": cid, "title": "Imported", "messages": messages})


def post_timed(port, token, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    conn.request("POST", "/api/chats", body=body, headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    ms = (time.perf_counter() - t0) * 1000
    conn.close()
    assert r.status in (200, 201), r.status
    return ms


def cpu_us_per_request(server, fn):
    """Runs a wrk load `fn` (returning wrk's tuple plus its request count) and the server CPU per request."""
    before = proc_jiffies(server.proc.pid)
    rps, _, _, _, requests = fn()
    used = proc_jiffies(server.proc.pid) - before
    return rps, used / CLK_TCK * 1e6 / max(requests, 1)


def wrk_counted(url, conns, duration, token=None):
    cmd = ["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "10s"]
    if token:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    assert not errors, f"{url}: {errors.group(0)}"
    return rps, 0, 0, 0, requests


def regression_round(binary, tmp):
    """Every figure of the regressions table, once, on `binary`: {figure: value}."""
    out = {}
    duration = 3 if QUICK else 10
    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    out["cold start to /api/health, empty (ms)"] = s.wait("/api/health") * 1000
    out["cold start to /api/ready, empty (ms)"] = s.wait() * 1000
    time.sleep(5)
    out["idle RSS 5 s after boot (MiB)"] = s.rss_mib()
    token = owner_token(s.port)
    for _ in range(5):
        owner_token(s.port)
    populate_small(s.port, token, 20)
    s.stop()
    s = Server(binary, d)
    out["cold start to /api/ready, populated (ms)"] = s.wait() * 1000
    s.stop()

    d = tempfile.mkdtemp(dir=tmp)
    s = Server(binary, d)
    s.wait()
    token = owner_token(s.port)
    populate_small(s.port, token, 199)
    status, _ = http_json(s.port, "POST", "/api/chats", {"id": "big", "title": "Big chat", "messages": big_chat_messages()},
                          token=token, timeout=120)
    assert status in (200, 201), status
    gate = Gate(s.proc.pid)
    base = f"http://127.0.0.1:{s.port}"
    for label, path, auth in (("GET /api/health c=32, owner's bearer", "/api/health", True),
                              ("GET /api/health c=32, no header", "/api/health", False),
                              ("cached GET /api/chats (200 chats) c=32", "/api/chats", True),
                              ("cached GET /api/chats/{big}?limit=20 c=32", "/api/chats/big?limit=20", True)):
        wrk_counted(base + path, 32, 1, token if auth else None)  # warm-up
        rps, cpu = gate.run(lambda: cpu_us_per_request(s, lambda: wrk_counted(base + path, 32, duration, token if auth else None)))
        out[label + " (req/s)"] = rps
        out[label + " (server CPU µs/req)"] = cpu
    p50, _, _, missed = gate.run(lambda: sse_round(s.port, token, 50, 20))
    out["SSE delivery p50, 50 subscribers (ms)"] = p50
    bodies = [(f"zqmarker{i}x{time.monotonic_ns()}", i) for i in range(5)]
    bodies = [(marker, import_body(2000, f"imp-{i}-{marker}", marker)) for marker, i in bodies]
    out["_import body bytes"] = len(bodies[0][1])
    times, searchable = [], []
    for marker, body in bodies:
        gate.wait_quiet()
        t0 = time.perf_counter()
        times.append(post_timed(s.port, token, body))
        # Until its last message is found (a build with search indexes in the import's
        # transaction or after it; one without has no search at all).
        while True:
            status, found = http_json(s.port, "GET", f"/api/chats/search?q={marker}", token=token)
            if status != 200 or found.get("hits"):
                break
            time.sleep(0.002)
        if status == 200:
            searchable.append((time.perf_counter() - t0) * 1000)
    out["import a 2,000-message chat, client-observed (ms, median of 5)"] = statistics.median(times)
    out["import → its last message found by search (ms, median of 5)"] = (
        statistics.median(searchable) if searchable else None)
    s.stop()
    return out


def section_regressions(binary, tmp, against, label):
    """The issue-39 figures on this build and on an earlier one (`--against`), rounds interleaved
    (A B, B A, A B) so both see the same machine."""
    print("regressions", flush=True)
    builds = [("this build", binary)] + ([(label, against)] if against else [])
    rounds = {name: [] for name, _ in builds}
    for r in range(1 if QUICK else 3):
        for name, exe in (builds if r % 2 == 0 else builds[::-1]):
            print(f"    round {r + 1}: {name}", flush=True)
            rounds[name].append(regression_round(exe, tmp))
    figures = [k for k in rounds["this build"][0] if not k.startswith("_")]
    size = rounds["this build"][0]["_import body bytes"]
    print(f"  {'regressions':11} {'figure':66} {'this build':24} {label if against else '':24} change (medians)", flush=True)
    for fig in figures:
        digits = 0 if "req/s" in fig else (2 if "SSE" in fig else 1)
        shown = lambda vals: fmt3(vals, "", digits) if vals else "n/a"
        mine = [x[fig] for x in rounds["this build"] if x[fig] is not None]
        row = [shown(mine)]
        change = ""
        if against:
            theirs = [x[fig] for x in rounds[label] if x[fig] is not None]
            row.append(shown(theirs))
            if mine and theirs:
                change = f"{(statistics.median(mine) / statistics.median(theirs) - 1) * 100:+.1f} %"
        note("regress", fig, "  |  ".join(row), change)
    note("regress", "import body (bytes)", f"{size:,}", "")


def apt_closure(pkgs):
    """The Debian packages `apt-get install --no-install-recommends pkgs` installs on an empty
    system (apt's own choice among alternatives, simulated: nothing is installed)."""
    out = subprocess.run(
        ["apt-get", "-s", "-o", "Dir::State::status=/dev/null", "install", "--no-install-recommends", *pkgs],
        capture_output=True, text=True, check=False).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("Inst ")}


def apt_installed_kib(pkgs):
    """The sum of the packages' Installed-Size (KiB), as apt's metadata states it."""
    if not pkgs:
        return 0
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", *sorted(pkgs)],
                         capture_output=True, text=True, check=False).stdout
    return sum(int(line.split(":", 1)[1]) for line in out.splitlines() if line.startswith("Installed-Size:"))


def section_image():
    """The runtime image's Debian packages before and after the agent's toolbox (issue 34):
    Installed-Size summed over what `apt-get install --no-install-recommends` adds to a slim
    Debian (its Priority: required packages, as this machine has them, count as the base).
    No Docker engine needed; npm (copied from the web stage) is measured on this machine."""
    print("image", flush=True)
    dockerfile = open(os.path.join(ROOT, "Dockerfile")).read()
    runtime = dockerfile.split("AS runtime", 1)[1]
    block = runtime.split("--no-install-recommends", 1)[1].split("&&", 1)[0]
    listed = [w for w in block.replace("\\", " ").split() if w]
    lib = open(os.path.join(ROOT, "scripts", "lib.sh")).read()
    toolbox = re.search(r"TOOLBOX_APT=\(([^)]*)\)", lib).group(1).split()
    base = [p for p in listed if p not in toolbox]
    required = set(subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Priority}\n"], capture_output=True,
                                  text=True, check=False).stdout.split("\n"))
    required = {r.split()[0].split(":")[0] for r in required if r.endswith(" required")}
    before = apt_closure(base) - required
    after = apt_closure(base + toolbox) - required
    mib = lambda kib: f"{kib / 1024:.1f} MiB"
    note("image", f"runtime Debian packages before the toolbox ({len(before)})", mib(apt_installed_kib(before)))
    added = after - before
    note("image", f"added by the toolbox ({len(added)} packages)", mib(apt_installed_kib(added)))
    browser = apt_closure(["chromium-headless-shell"]) - before - required
    note("image", "  of which Chromium's headless shell and its libraries", mib(apt_installed_kib(browser)))
    npm = shutil.which("npm")
    if npm:
        npm_dir = os.path.dirname(os.path.dirname(os.path.realpath(npm)))
        kib = int(subprocess.run(["du", "-sk", npm_dir], capture_output=True, text=True).stdout.split()[0])
        note("image", "npm/npx (copied from the web stage; this machine's npm)", mib(kib))


def main():
    global QUICK, NO_GATE, BINARY
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default="")
    ap.add_argument("--no-gate", action="store_true")
    ap.add_argument("--against", default="", help="an earlier build's binary for the regressions table")
    ap.add_argument("--against-label", default="earlier build")
    args = ap.parse_args()
    QUICK = args.quick
    NO_GATE = args.no_gate
    BINARY = args.binary
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only
    tmp = tempfile.mkdtemp(prefix="mobius-bench-")
    try:
        print(f"  {'section':9} {'workload':58} {'min / median / max':42} target", flush=True)
        if want("image"):
            section_image()
        if want("boot") or want("health"):
            section_boot_and_health(args.binary, tmp)
        if want("chats"):
            section_chats(args.binary, tmp)
        if want("sse"):
            section_sse(args.binary, tmp)
        if want("snapshot"):
            section_snapshot(tmp)
        if want("apply"):
            section_apply(args.binary, tmp)
        if want("shell"):
            section_shell(args.binary, tmp)
        if want("proxy"):
            section_proxy(tmp)
        if want("connectors"):
            section_connectors(tmp)
        if want("storage"):
            section_storage(args.binary, tmp)
        if want("appdoc"):
            section_appdoc(args.binary, tmp)
        if want("theme"):
            section_theme(args.binary, tmp)
        if want("screenshot"):
            section_screenshot(args.binary, tmp)
        if want("push"):
            section_push(args.binary, tmp, args.baseline)
        if want("schedules"):
            section_schedules(args.binary, tmp)
        if want("lifecycle"):
            section_lifecycle(args.binary, tmp)
        if want("frontend"):
            section_frontend(args.binary)
        if want("review"):
            section_review(args.binary, tmp)
        if want("search"):
            section_search(args.binary, tmp, args.baseline)
        if want("sandbox"):
            section_sandbox(tmp)
        if want("jobs"):
            section_jobs(tmp)
        if want("flood"):
            section_flood(args.binary, tmp)
        if want("scale"):
            section_scale(args.binary, tmp)
        if want("uploads"):
            section_uploads(args.binary, tmp)
        if want("agents"):
            section_agents(args.binary, tmp)
        if want("updates"):
            section_updates(args.binary, tmp)
        if want("regressions"):
            section_regressions(args.binary, tmp, args.against, args.against_label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
