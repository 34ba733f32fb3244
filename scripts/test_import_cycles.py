#!/usr/bin/env python3
"""Unit tests of import-cycles.py: it must catch what it is there to catch.

Run: python3 scripts/test_import_cycles.py (scripts/check does).
"""
import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("import_cycles", os.path.join(HERE, "import-cycles.py"))
import_cycles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_cycles)


def crate(files):
    """A throwaway crate: {relative path: text}."""
    root = tempfile.mkdtemp(prefix="import-cycles-")
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = import_cycles.main(list(args))
    return code, out.getvalue()


BASE = {
    "lib.rs": "pub mod config;\npub mod error;\npub mod net;\npub mod state;\n",
    "error.rs": "pub struct Error;\n",
    "state.rs": "use crate::config::Config;\npub struct AppState(Config);\n",
    "net/mod.rs": "pub mod client;\npub use client::ClientAddr;\n",
    "net/client.rs": "use crate::state::AppState;\npub struct ClientAddr;\npub struct TrustedProxies;\n",
}


class ImportCycles(unittest.TestCase):
    def test_a_tree_without_cycles_passes(self):
        src = crate({**BASE, "config.rs": "use crate::error::Error;\npub struct Config;\n"})
        self.assertEqual(run(src), (0, ""))

    def test_a_planted_sideways_pub_use_is_a_dependency(self):
        # config re-exports a type of a file that depends on state, which depends on config.
        src = crate({**BASE, "config.rs": "pub use crate::net::client::TrustedProxies;\npub struct Config;\n"})
        code, out = run(src)
        self.assertEqual(code, 1)
        self.assertIn("config.rs", out)
        self.assertIn("net/client.rs", out)
        self.assertIn("state.rs", out)

    def test_re_exporting_a_files_own_children_is_not(self):
        # net/mod.rs re-exports its child, whose items… name nothing of net/mod.rs: fine either
        # way; but a child importing its parent while the parent re-exports it is no cycle.
        files = {
            **BASE,
            "config.rs": "pub struct Config;\n",
            "net/client.rs": "use super::LIMIT;\npub struct ClientAddr;\n",
            "net/mod.rs": "pub mod client;\npub use client::ClientAddr;\npub const LIMIT: u8 = 1;\n",
        }
        self.assertEqual(run(crate(files)), (0, ""))

    def test_config_may_import_only_error(self):
        files = {**BASE, "config.rs": "use crate::error::Error;\npub struct Config;\n"}
        self.assertEqual(run("--only", "config=error", crate(files)), (0, ""))
        files["config.rs"] = "pub struct Config(crate::net::client::ClientAddr);\n"
        files["net/client.rs"] = "pub struct ClientAddr;\n"
        code, out = run("--only", "config=error", crate(files))
        self.assertEqual(code, 1)
        self.assertIn("config.rs imports net/client.rs", out)

    def test_a_test_only_file_is_ignored(self):
        files = {
            **BASE,
            "config.rs": "pub struct Config;\n#[cfg(test)]\nmod checks;\n",
            "config/checks.rs": "use crate::state::AppState;\n",
        }
        self.assertEqual(run("--only", "config=error", crate(files)), (0, ""))


if __name__ == "__main__":
    unittest.main()
