#!/usr/bin/env python3
"""Fails when a Rust test suite sleeps without saying why.

Usage: test-sleeps.py DIR [DIR...]

Suites wait with `eventually()` (backend/server/tests/api/helpers.rs) or on an event they can
observe. A `sleep(` call (`tokio::time::sleep`, `std::thread::sleep`, or either imported) is
allowed only where the time passing is the thing under test, or where nothing can await (a
`Drop`): the call's line, or the comment lines right above it, carry `allow-sleep: <reason>`.
Shell and Python text inside the tests (`sleep 300`, `time.sleep(1)`) is not a Rust call and is
not counted.
"""
import os
import re
import sys

CALL = re.compile(r"(?:^|[^.\w])sleep\(|::sleep\(")
MARK = re.compile(r"allow-sleep:\s*\S.{8,}")


def allowed(lines, i):
    if MARK.search(lines[i]):
        return True
    j = i - 1
    while j >= 0 and lines[j].strip().startswith("//"):
        if MARK.search(lines[j]):
            return True
        j -= 1
    return False


def offenders(root):
    for base, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(base, name)
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines):
                code = line.split("//", 1)[0]
                if CALL.search(code) and not allowed(lines, i):
                    yield f"{path}:{i + 1}: {line.strip()}"


def main(roots):
    found = [o for root in roots for o in offenders(root)]
    for o in found:
        print(o)
    if found:
        print(
            "a test above sleeps: wait with eventually() or on an event; if the time passing is what "
            "is tested, say so with `// allow-sleep: <reason>` on the line above",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
