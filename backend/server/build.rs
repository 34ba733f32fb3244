//! Bakes the build identity shown by `/api/version` into the binary, the release feed and the
//! image key updates compare (`platform/`), and links the server with packed relative
//! relocations.

use sha2::{Digest, Sha256};

fn main() {
    for key in ["MOBIUS_BUILD_SHA", "MOBIUS_BUILD_DATE"] {
        println!("cargo:rerun-if-env-changed={key}");
        let value = std::env::var(key).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| "dev".into());
        println!("cargo:rustc-env={key}={value}");
    }
    // The feed this build checks for updates: set by `scripts/release build` and the image build
    // (its repository's latest release); a plain `cargo build` checks nothing (no request leaves
    // a developer's or CI's machine).
    println!("cargo:rerun-if-env-changed=MOBIUS_RELEASE_FEED");
    let feed = std::env::var("MOBIUS_RELEASE_FEED").unwrap_or_default();
    println!("cargo:rustc-env=MOBIUS_RELEASE_FEED={}", feed.trim());
    println!("cargo:rustc-env=MOBIUS_IMAGE_KEY={}", image_key());
    // The binary stays position-independent (ASLR), but its ~50,000 relative relocations are
    // stored as a compact bitmap (DT_RELR, glibc ≥ 2.36) instead of a 1.2 MB table that the
    // loader would read, and keep resident, at every start.
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// What the image must hold besides the binary and the PWA: the Dockerfile's pins of Node,
/// Debian and the agent CLIs, and the libraries mini-apps import (`frontend/package.json`'s
/// `dependencies`). A release whose key differs needs the image, not an in-place update.
/// (`scripts/release` checks that the image build sees the same files.)
fn image_key() -> String {
    // Read when the script runs, not baked in when it compiles: cargo reuses a compiled build
    // script for the same package checked out elsewhere with the same target directory.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = std::path::Path::new(&manifest_dir).join("../..");
    let mut hasher = Sha256::new();
    for (file, keep) in [
        (
            "Dockerfile",
            (|l: &str| {
                ["ARG NODE_VERSION=", "ARG DEBIAN_RELEASE=", "ARG CLAUDE_CODE_VERSION=", "ARG CODEX_VERSION="]
                    .iter()
                    .any(|p| l.trim_start().starts_with(p))
            }) as fn(&str) -> bool,
        ),
        ("frontend/package.json", |_| true),
    ] {
        let path = root.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let text = if file.ends_with("package.json") { dependencies_block(&text) } else { text };
        hasher.update(file.as_bytes());
        for line in text.lines().filter(|l| keep(l)) {
            hasher.update(line.trim().as_bytes());
            hasher.update(b"\n");
        }
    }
    hasher.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The lines of the top-level `"dependencies": { … }` block of a package.json.
fn dependencies_block(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        if !inside && line.trim_start().starts_with("\"dependencies\"") {
            inside = true;
            continue;
        }
        if inside {
            if line.trim_start().starts_with('}') {
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
