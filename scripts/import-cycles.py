#!/usr/bin/env python3
"""Fails when files of a Rust crate import each other in a cycle, or a ground-floor module
imports more of the crate than it may.

Usage: import-cycles.py [--only MODULE=ALLOWED,…]… SRC_DIR [SRC_DIR...]

A file depends on another when it names a path into it: a `use` item or an inline
`crate::…` / `super::…` path, resolved to the longest module prefix that is a file. Test
modules (`#[cfg(test)]` to the end of the file, or a whole file its parent declares under
`#[cfg(test)]`) are ignored, and so are re-exports of a file's own descendants (`pub use
child::Item`): a parent naming its children's items for its callers does not make it depend on
them. A re-export of anything else (`pub use crate::sideways::Item`) is a dependency like any
other. Everything else counts, so a parent whose children import its items must not call into
those children itself.

`--only config=error` says the files of module `config` (and its descendants) may depend on
nothing of the crate but each other and the files of module `error`.
"""
import os
import re
import sys

USE = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
CHILD = re.compile(r"(?<![\w:])([a-z_][a-z0-9_]*)::")
INLINE = re.compile(r"(?<![\w:])((?:crate|super)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)")


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"] or rel == ["main"]:
        return ()
    return tuple(rel)


def expand(tree):
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1:i], tree[i + 1:]
                parts, d, cur = [], 0, ""
                for c in inner:
                    if c == "," and d == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    d += c == "{"
                    d -= c == "}"
                    cur += c
                parts.append(cur)
                out = []
                for p in filter(None, parts):
                    out.extend(expand(prefix + p + rest))
                return out
    return [re.sub(r"\bas\b.*$", "", tree)]


def absolute(segments, here):
    """Turns `crate::…` / `super::…` / `self::…` into a path from the crate root."""
    if segments[0] == "crate":
        return segments[1:]
    if segments[0] == "self":
        return list(here) + segments[1:]
    if segments[0] == "super":
        parent, rest = list(here[:-1]), segments[1:]
        while rest and rest[0] == "super":
            parent, rest = parent[:-1], rest[1:]
        return parent + rest
    return None


def test_modules(src, files):
    """Files their parent declares under `#[cfg(test)]` (`#[cfg(test)] mod typescript;`)."""
    out = set()
    by_module = {m: p for p, m in files.items()}
    for path, here in files.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M):
            child = by_module.get(tuple(here) + (m.group(1),))
            if child:
                out.add(child)
    return out


def graph(src):
    """Each file of the crate under `src` → the files it depends on; and file → module path."""
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                files[path] = module_of(src, path)
    tests = test_modules(src, files)
    files = {p: m for p, m in files.items() if p not in tests}
    modules = {m: p for p, m in files.items() if m}
    edges = {p: set() for p in files}
    for path, here in files.items():
        if not here:
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        cut = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod\s+\w+\s*\{", text, re.M)
        if cut:
            text = text[:cut.start()]
        text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
        targets = []
        for m in USE.finditer(text):
            for item in expand(m.group(3)):
                targets.append((item.split("::"), bool(m.group(1))))
        body = USE.sub("", text)
        for m in INLINE.finditer(body):
            targets.append((m.group(1).split("::"), False))
        # A module file naming its own children inline (`actor::Actor::new(…)`).
        children = {m[-1] for m in modules if len(m) == len(here) + 1 and m[:-1] == tuple(here)}
        for m in CHILD.finditer(body):
            if m.group(1) in children:
                targets.append((["self", m.group(1)], False))
        for segments, reexport in targets:
            if segments[0] not in ("crate", "super", "self"):
                # `use routes::x` inside a module file names a child module.
                if tuple(here) + (segments[0],) not in modules:
                    continue
                segments = ["self"] + segments
            full = absolute(segments, here)
            if full is None:
                continue
            for n in range(len(full), 0, -1):
                module = tuple(full[:n])
                target = modules.get(module)
                if target:
                    descendant = len(module) > len(here) and module[:len(here)] == tuple(here)
                    if target != path and not (reexport and descendant):
                        edges[path].add(target)
                    break
    return files, edges


def within(module, top):
    return module[:len(top)] == top


def main(argv):
    cycles_found = False
    only = {}
    args = list(argv)
    while args and args[0] == "--only":
        name, _, allowed = args[1].partition("=")
        only[tuple(name.split("::"))] = [tuple(a.split("::")) for a in allowed.split(",") if a]
        args = args[2:]
    for src in args:
        files, edges = graph(src)
        for top, allowed in only.items():
            for path, here in sorted(files.items()):
                if not here or not within(here, top):
                    continue
                for target in sorted(edges[path]):
                    there = files[target]
                    if not any(within(there, ok) for ok in [top] + allowed):
                        cycles_found = True
                        names = ", ".join("::".join(a) for a in allowed) or "nothing"
                        print(f"{os.path.relpath(path, src)} imports {os.path.relpath(target, src)}: "
                              f"{'::'.join(top)} may import {names} of the crate")
        # Tarjan's strongly connected components.
        index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
        sys.setrecursionlimit(10000)

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in edges[v]:
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                sccs.append(comp)

        for v in sorted(edges):
            if v not in index:
                strong(v)
        for comp in sccs:
            if len(comp) > 1:
                cycles_found = True
                names = sorted(os.path.relpath(p, src) for p in comp)
                print(f"import cycle in {src}: " + " ↔ ".join(names))
                for p in sorted(comp):
                    inside = sorted(os.path.relpath(t, src) for t in edges[p] if t in comp)
                    print(f"    {os.path.relpath(p, src)} → {', '.join(inside)}")
    return 1 if cycles_found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
