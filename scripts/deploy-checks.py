"""Static deployment checks for scripts/check-deploy (no Docker engine needed).

    deploy-checks.py compose FILE       interpolate like docker compose, validate against the
                                        compose-spec schema, check the deployment's promises
    deploy-checks.py workflow-scripts FILE...
                                        shellcheck on every `run:` step of GitHub workflows
                                        (expressions replaced by a variable, as actionlint does)
    deploy-checks.py build-override FILE
                                        the build-from-source override: valid, builds the app
    deploy-checks.py copies DOCKERFILE  every COPY/ADD source from the build context exists
                                        and is not excluded by .dockerignore
    deploy-checks.py layout DOCKERFILE DEST SOURCES_JSON
                                        lay out the final stage under DEST with symlinks (each
                                        COPY; --from sources through SOURCES_JSON, a map of
                                        "stage:/path" prefixes to host paths, null to skip) and
                                        print its start: {env, cmd, user, workdir, volumes}

Runs in the tools virtualenv of check-deploy (ruamel.yaml comes with check-jsonschema).
Prints nothing and exits 0 when all is well; otherwise one line per problem and exits 1.
"""

import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TEST_DOMAIN = "mobius.example.test"


class Missing(Exception):
    """A required variable (${VAR:?message}) is not set."""


def interpolate_str(text, env):
    """Applies compose-style interpolation ($$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d},
    ${VAR:?e}, ${VAR?e}, ${VAR:+r}, ${VAR+r}; defaults may nest) to one string."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "$":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "{":
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if depth:
                raise ValueError(f"unclosed ${{ in {text!r}")
            out.append(expand(text[i + 2 : j - 1], env))
            i = j
        else:
            m = NAME.match(text, i + 1)
            if not m:
                raise ValueError(f"a lone $ in {text!r} (write $$)")
            out.append(env.get(m.group(0), ""))
            i = m.end()
    return "".join(out)


def expand(inner, env):
    m = NAME.match(inner)
    if not m:
        raise ValueError(f"bad variable reference ${{{inner}}}")
    name, rest = m.group(0), inner[m.end() :]
    value = env.get(name)
    for op in (":-", ":?", ":+", "-", "?", "+"):
        if rest.startswith(op):
            arg = interpolate_str(rest[len(op) :], env)
            unset_or_empty = not value if op.startswith(":") else value is None
            kind = op[-1]
            if kind == "-":
                return arg if unset_or_empty else value
            if kind == "?":
                if unset_or_empty:
                    raise Missing(f"{name}: {arg}")
                return value
            return "" if unset_or_empty else arg
    if rest:
        raise ValueError(f"bad variable reference ${{{inner}}}")
    return value or ""


def interpolate(node, env):
    if isinstance(node, dict):
        return {k: interpolate(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v, env) for v in node]
    if isinstance(node, str):
        return interpolate_str(node, env)
    return node


def plain(node):
    """ruamel's round-trip types → plain dicts, lists and scalars (merge keys resolved)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


def load_yaml(path):
    from ruamel.yaml import YAML

    with open(path, encoding="utf-8") as f:
        return plain(YAML(typ="safe", pure=True).load(f))


def check_compose(path):
    problems = []
    raw = load_yaml(path)

    try:
        interpolate(raw, {})
        problems.append("without DOMAIN the compose file must refuse to start (use ${DOMAIN:?message})")
    except Missing as e:
        if not str(e).startswith("DOMAIN:"):
            problems.append(f"without DOMAIN, compose stops on something else: {e}")

    env = {"DOMAIN": TEST_DOMAIN}
    try:
        doc = interpolate(raw, env)
    except (Missing, ValueError) as e:
        return [f"interpolation with DOMAIN={TEST_DOMAIN} fails: {e}"]

    validator = os.path.join(os.path.dirname(sys.executable), "check-jsonschema")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        result = subprocess.run(
            [validator, "--builtin-schema", "vendor.compose-spec", f.name],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(f.name)
    if result.returncode != 0:
        problems.append("compose-spec schema: " + (result.stdout + result.stderr).strip().replace(f.name, path))

    services = doc.get("services", {})
    app, caddy = services.get("app"), services.get("caddy")
    if not app or not caddy:
        return problems + ["services app and caddy are both required"]
    if app.get("ports"):
        problems.append("app must not publish ports; Caddy is the only way in")
    if app.get("build"):
        problems.append("app must pull the published image (keep build: in docker-compose.build.yml)")
    image = str(app.get("image") or "")
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", tag):
        problems.append(f"app must use the published image at a pinned version (image: …:X.Y.Z), not {image!r}")
    env_of = app.get("environment") or {}
    if isinstance(env_of, list):
        env_of = dict(item.split("=", 1) for item in env_of if "=" in item)
    if env_of.get("MOBIUS_PUBLIC_ORIGIN") != f"https://{TEST_DOMAIN}":
        problems.append("app needs MOBIUS_PUBLIC_ORIGIN=https://${DOMAIN}")
    if not any(str(v).endswith(":/data") or str(v).split(":")[1:2] == ["/data"] for v in app.get("volumes", [])):
        problems.append("app needs a volume on /data")
    if not app.get("mem_limit"):
        problems.append("app needs a memory limit (mem_limit)")
    else:
        bigger = interpolate(raw, {**env, "MOBIUS_APP_MEM_LIMIT": "6g"})["services"]["app"]["mem_limit"]
        if bigger != "6g":
            problems.append("the memory limit must be overridable with MOBIUS_APP_MEM_LIMIT")
    if "mobius healthcheck" not in " ".join(map(str, (app.get("healthcheck") or {}).get("test") or [])):
        problems.append("app healthcheck must run `mobius healthcheck`")
    for name, svc in (("app", app), ("caddy", caddy)):
        if svc.get("restart") != "unless-stopped":
            problems.append(f"{name} must restart: unless-stopped")
    dep = (caddy.get("depends_on") or {}).get("app") if isinstance(caddy.get("depends_on"), dict) else None
    if not dep or dep.get("condition") != "service_healthy":
        problems.append("caddy must depend on app being service_healthy")
    ports = [str(p) for p in caddy.get("ports", [])]
    for want in ("80:80", "443:443"):
        if want not in ports:
            problems.append(f"caddy must publish {want}")
    if not any(str(v).startswith("./Caddyfile:/etc/caddy/Caddyfile") for v in caddy.get("volumes", [])):
        problems.append("caddy must mount ./Caddyfile at /etc/caddy/Caddyfile")
    if (caddy.get("environment") or {}).get("DOMAIN") != TEST_DOMAIN:
        problems.append("caddy needs DOMAIN for the Caddyfile")
    return problems


def check_build_override(path):
    doc = interpolate(load_yaml(path), {"DOMAIN": TEST_DOMAIN})
    validator = os.path.join(os.path.dirname(sys.executable), "check-jsonschema")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        result = subprocess.run(
            [validator, "--builtin-schema", "vendor.compose-spec", f.name], capture_output=True, text=True, check=False
        )
    finally:
        os.unlink(f.name)
    problems = []
    if result.returncode != 0:
        problems.append("compose-spec schema: " + (result.stdout + result.stderr).strip().replace(f.name, path))
    build = ((doc.get("services") or {}).get("app") or {}).get("build") or {}
    if build.get("context") != ".":
        problems.append("the override must build the app from this checkout (build: context: .)")
    return problems


def check_workflow_scripts(paths):
    problems = []
    for path in paths:
        doc = load_yaml(path)
        for job_name, job in (doc.get("jobs") or {}).items():
            for index, step in enumerate(job.get("steps") or []):
                script = step.get("run")
                if not script:
                    continue
                body = re.sub(r"\$\{\{[^}]*\}\}", "${GITHUB_EXPRESSION}", script)
                with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
                    f.write("#!/usr/bin/env bash\nset -eo pipefail\n" + body)
                try:
                    result = subprocess.run(
                        ["shellcheck", "--shell=bash", "-e", "SC2154", f.name], capture_output=True, text=True, check=False
                    )
                finally:
                    os.unlink(f.name)
                if result.returncode != 0:
                    where = f"{path}: jobs.{job_name}.steps[{index}] ({step.get('name', 'unnamed')})"
                    problems.append(where + "\n" + result.stdout.replace(f.name, "run"))
    return problems


def instructions(path):
    """(keyword, argument text, stage index) for each instruction, continuations joined."""
    out, buf, stage = [], "", -1
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if not buf and (not stripped or stripped.startswith("#")):
                continue
            if buf and stripped.startswith("#"):
                continue
            if stripped.endswith("\\"):
                buf += stripped[:-1] + " "
                continue
            buf += stripped
            keyword, _, rest = buf.partition(" ")
            keyword = keyword.upper()
            if keyword == "FROM":
                stage += 1
            out.append((keyword, rest.strip(), stage))
            buf = ""
    return out


def arguments(rest):
    if rest.startswith("["):
        return json.loads(rest)
    return shlex.split(rest)


def ignore_patterns(root):
    path = os.path.join(root, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        lines = [l.strip() for l in f]
    return [l.rstrip("/") for l in lines if l and not l.startswith("#")]


def pattern_regex(pattern):
    """A .dockerignore pattern (Go filepath.Match plus **) as an anchored regex."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def ignored(rel, patterns):
    """True when .dockerignore leaves `rel` (or a folder above it) out of the context."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        regex = pattern_regex(os.path.normpath(pattern.lstrip("!").lstrip("/")))
        if any(regex.match(prefix) for prefix in prefixes):
            verdict = not negate
    return verdict


def check_copies(dockerfile):
    root = os.path.dirname(os.path.abspath(dockerfile))
    patterns = ignore_patterns(root)
    problems = []
    for keyword, rest, _ in instructions(dockerfile):
        if keyword not in ("COPY", "ADD"):
            continue
        args = arguments(rest)
        flags = [a for a in args if a.startswith("--")]
        paths = [a for a in args if not a.startswith("--")]
        if any(f.startswith("--from=") for f in flags):
            continue
        if len(paths) < 2:
            problems.append(f"{keyword} {rest}: needs a source and a destination")
            continue
        for src in paths[:-1]:
            # A URL, or a path named by a build argument (a release's dist/image/<arch>/).
            if re.match(r"^[a-z]+://", src) or "$" in src:
                continue
            rel = os.path.normpath(src).lstrip("/")
            matches = glob.glob(os.path.join(root, rel))
            if not matches:
                problems.append(f"{keyword} {src}: not found in the repository")
            elif rel != "." and ignored(rel, patterns):
                problems.append(f"{keyword} {src}: excluded by .dockerignore")
    return problems


DOCKER_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def env_pairs(rest):
    """The KEY=VALUE pairs of one ENV instruction (the legacy `ENV KEY value` form too)."""
    words = shlex.split(rest)
    if words and "=" not in words[0]:
        return [(words[0], " ".join(words[1:]))]
    return [tuple(w.split("=", 1)) for w in words]


def substitute(value, env):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), value)


def layout(dockerfile, dest, sources):
    """Stands in for the final stage: symlinks for its COPYs under `dest`, and its start."""
    root = os.path.dirname(os.path.abspath(dockerfile))
    insts = instructions(dockerfile)
    last = max((s for _, _, s in insts), default=0)
    env = {"PATH": DOCKER_DEFAULT_PATH}
    start = {"cmd": None, "user": None, "workdir": "/", "volumes": []}
    problems = []
    for keyword, rest, stage in insts:
        if stage != last:
            continue
        if keyword == "ENV":
            for key, value in env_pairs(rest):
                env[key] = substitute(value, env)
        elif keyword == "CMD":
            start["cmd"] = arguments(rest)
        elif keyword == "USER":
            start["user"] = rest
        elif keyword == "WORKDIR":
            start["workdir"] = os.path.join(start["workdir"], rest)
        elif keyword == "VOLUME":
            start["volumes"] += arguments(rest) if rest.startswith("[") else rest.split()
        elif keyword == "COPY":
            args = arguments(rest)
            stage_from = next((a[7:] for a in args if a.startswith("--from=")), None)
            paths = [a for a in args if not a.startswith("--")]
            for src in paths[:-1]:
                if stage_from is None:
                    host = os.path.join(root, src)
                else:
                    key = f"{stage_from}:{src.rstrip('/')}"
                    prefix = max((p for p in sources if key == p or key.startswith(p.rstrip("/") + "/")), key=len, default=None)
                    if prefix is None:
                        problems.append(f"COPY --from={stage_from} {src}: check-deploy has no stand-in for it")
                        continue
                    if sources[prefix] is None:
                        continue
                    host = sources[prefix] + key[len(prefix) :]
                if not os.path.exists(host):
                    problems.append(f"COPY {src}: the stand-in {host} does not exist")
                    continue
                target = paths[-1]
                if not os.path.isdir(host) and target.endswith("/"):
                    target = os.path.join(target, os.path.basename(src.rstrip("/")))
                link = dest + os.path.normpath(target)
                os.makedirs(os.path.dirname(link), exist_ok=True)
                if os.path.lexists(link):
                    os.unlink(link)
                os.symlink(os.path.abspath(host), link)
    if problems:
        for p in problems:
            print(f"{os.path.basename(dockerfile)}: {p}", file=sys.stderr)
        raise SystemExit(1)
    if not start["cmd"]:
        raise SystemExit(f"{os.path.basename(dockerfile)}: the final stage has no CMD")

    def remap(path):
        """Image paths → under `dest`; system paths (/usr/bin, …) stay the host's."""
        owned = [v.rstrip("/") for v in start["volumes"]] + ["/app", "/opt", "/home"]
        if any(path == o or path.startswith(o + "/") for o in owned) or os.path.lexists(dest + path):
            return dest + path
        return path

    for key, value in env.items():
        parts = value.split(":") if key == "PATH" else [value]
        env[key] = ":".join(remap(p) if p.startswith("/") else p for p in parts)
    start["env"] = env
    start["workdir"] = remap(start["workdir"])
    start["volumes"] = [dest + v for v in start["volumes"]]
    return start


def main(argv):
    if len(argv) == 5 and argv[1] == "layout":
        print(json.dumps(layout(argv[2], os.path.abspath(argv[3]), json.loads(argv[4]))))
        return 0
    if len(argv) >= 3 and argv[1] == "workflow-scripts":
        problems = check_workflow_scripts(argv[2:])
        for p in problems:
            print(p)
        return 1 if problems else 0
    if len(argv) != 3 or argv[1] not in ("compose", "copies", "build-override"):
        print(__doc__, file=sys.stderr)
        return 2
    what, path = argv[1], argv[2]
    checks = {"compose": check_compose, "copies": check_copies, "build-override": check_build_override}
    problems = checks[what](path)
    for p in problems:
        print(f"{os.path.basename(path)}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
