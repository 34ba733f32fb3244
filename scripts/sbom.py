"""CycloneDX 1.5 SBOM of what a release ships: the Rust crates linked into `mobius` (normal
dependencies of the package, from `cargo metadata`) and the npm packages of the PWA bundle and
the app libraries in the image (frontend/package-lock.json without dev packages).

    sbom.py ROOT VERSION > mobius-VERSION.cdx.json
"""

import json
import subprocess
import sys
import uuid
from datetime import datetime, timezone


def rust_components(root):
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--manifest-path", f"{root}/Cargo.toml"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    start = next(p["id"] for p in meta["packages"] if p["name"] == "mobius" and p["source"] is None)
    seen, todo = set(), [start]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            normal = any(k["kind"] is None for k in dep["dep_kinds"])
            if normal and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    out = []
    for pid in sorted(seen, key=lambda i: (packages[i]["name"], packages[i]["version"])):
        p = packages[pid]
        component = {
            "type": "library",
            "name": p["name"],
            "version": p["version"],
            "purl": f"pkg:cargo/{p['name']}@{p['version']}",
        }
        if p.get("license"):
            component["licenses"] = [{"expression": p["license"]}]
        if p["source"] is None:
            component["purl"] = f"pkg:cargo/{p['name']}@{p['version']}?repository_url=local"
        out.append(component)
    return out


def npm_components(root):
    lock = json.load(open(f"{root}/frontend/package-lock.json", encoding="utf-8"))
    out = []
    for path, p in sorted(lock.get("packages", {}).items()):
        if not path or p.get("dev") or p.get("link"):
            continue
        name = path.split("node_modules/")[-1]
        scope, _, bare = name.rpartition("/")
        purl_name = f"{scope.replace('@', '%40')}/{bare}" if scope else bare
        component = {"type": "library", "name": name, "version": p.get("version", ""), "purl": f"pkg:npm/{purl_name}@{p.get('version', '')}"}
        if p.get("license"):
            component["licenses"] = [{"expression": p["license"]}]
        if p.get("integrity"):
            algo, _, digest = p["integrity"].partition("-")
            component["hashes"] = [{"alg": algo.upper().replace("SHA", "SHA-"), "content": digest}]
        out.append(component)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, version = argv[1], argv[2]
    bom = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'mobius/' + version)}",
        "version": 1,
        "metadata": {
            "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "component": {"type": "application", "name": "mobius", "version": version, "purl": f"pkg:cargo/mobius@{version}"},
        },
        "components": rust_components(root) + npm_components(root),
    }
    json.dump(bom, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
