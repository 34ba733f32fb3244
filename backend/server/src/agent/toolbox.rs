//! The agent's toolbox: the `PATH` its processes (turns and app jobs) get, and which of the
//! everyday tools on it work, with their versions (Settings › Agent sandbox, `mobius toolbox`).
//!
//! The `PATH` is curated, not the server's own: the server's may lead through a version
//! manager's shims (`~/.pyenv/shims/python3` is a script that runs files under `~/.pyenv`), which
//! the sandbox does not open, so the tool would die with "Permission denied". The agent gets the
//! folder of the `mobius` binary, the folders the CLIs and `node` are found in and really live in
//! (links resolved), and the system's folders — all of which the sandbox opens for reading and
//! executing (`sandbox::grants` grants every `PATH` folder).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::locks::Unpoisoned;

/// The system's folders, in the usual order.
pub const SYSTEM_PATH: &[&str] = &["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
/// How long one tool's `--version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of a tool's answer read.
const PROBE_MAX_BYTES: usize = 4096;
/// How long the list is kept before the tools are asked again.
const TOOLBOX_CACHE: Duration = Duration::from_secs(300);

/// A tool the agent is told it has, and how to ask its version.
struct Spec {
    name: &'static str,
    /// The commands that provide it, the first found wins.
    commands: &'static [&'static str],
    args: &'static [&'static str],
    purpose: &'static str,
}

const TOOLS: &[Spec] = &[
    Spec {
        name: "python3",
        commands: &["python3"],
        args: &["--version"],
        purpose: "Python 3 with its standard library; `python3 -m venv .venv` for packages",
    },
    Spec { name: "node", commands: &["node"], args: &["--version"], purpose: "Node.js" },
    Spec { name: "npm", commands: &["npm"], args: &["--version"], purpose: "npm and npx" },
    Spec { name: "sqlite3", commands: &["sqlite3"], args: &["--version"], purpose: "SQLite shell" },
    Spec { name: "jq", commands: &["jq"], args: &["--version"], purpose: "JSON on the command line" },
    Spec { name: "ripgrep", commands: &["rg"], args: &["--version"], purpose: "fast search (rg)" },
    Spec { name: "unzip", commands: &["unzip"], args: &["-v"], purpose: "zip archives" },
    Spec { name: "git", commands: &["git"], args: &["--version"], purpose: "version control" },
    Spec { name: "curl", commands: &["curl"], args: &["--version"], purpose: "HTTP requests" },
    Spec {
        name: "chromium",
        commands: &["chromium-headless-shell", "chromium"],
        args: &["--version"],
        purpose: "headless browser: HTML → PDF (--print-to-pdf) and screenshots",
    },
];

/// One tool as found on the agent's `PATH`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tool {
    pub name: &'static str,
    /// The command that runs it (`rg` for ripgrep), when found.
    pub command: Option<String>,
    /// Its version, when it answered.
    pub version: Option<String>,
    pub purpose: &'static str,
}

/// The `PATH` of the agent's processes: the `mobius` binary's folder, then `extra` (folders
/// of binaries the agent runs: the CLIs, `node`), then [`SYSTEM_PATH`]. Links are resolved, so
/// a folder of links to elsewhere grants where the files are.
pub fn agent_path(extra: &[PathBuf]) -> String {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut add = |dir: PathBuf| {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    };
    if let Some(dir) = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
        add(dir);
    }
    for dir in extra {
        add(dir.clone());
    }
    for dir in SYSTEM_PATH {
        add(PathBuf::from(dir));
    }
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(":")
}

/// The folders of `bin` for the agent's `PATH`: the one it is found in (a bare name is looked up
/// on the server's `PATH`), so the agent finds it by its name (`claude` in a folder of npm's
/// links), and the one its file really lives in (links resolved), for what sits beside it.
/// Empty when it is not found.
pub fn dirs_of(bin: &Path) -> Vec<PathBuf> {
    let found = if bin.components().count() == 1 {
        match bin.to_str().and_then(|name| find_on(&std::env::var("PATH").unwrap_or_default(), name)) {
            Some(found) => found,
            None => return Vec::new(),
        }
    } else {
        bin.to_path_buf()
    };
    let mut dirs: Vec<PathBuf> = found.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(real) = std::fs::canonicalize(&found).ok().and_then(|p| p.parent().map(Path::to_path_buf))
        && !dirs.contains(&real)
    {
        dirs.push(real);
    }
    dirs
}

/// The first `name` on `path` that is a file.
pub fn find_on(path: &str, name: &str) -> Option<PathBuf> {
    path.split(':').filter(|d| d.starts_with('/')).map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// The tools on a `PATH`, asked now and then (cached for [`TOOLBOX_CACHE`]).
#[derive(Debug, Default)]
pub struct Toolbox {
    cache: std::sync::Mutex<Option<(Instant, Vec<Tool>)>>,
}

impl Toolbox {
    /// The tools on `path`, each asked with an empty environment but `PATH` and `HOME`.
    pub async fn list(&self, path: &str, home: &Path) -> Vec<Tool> {
        if let Some((at, tools)) = self.cache.locked().clone()
            && at.elapsed() < TOOLBOX_CACHE
        {
            return tools;
        }
        let tools = probe(path, home).await;
        *self.cache.locked() = Some((Instant::now(), tools.clone()));
        tools
    }
}

/// Asks every tool of [`TOOLS`] on `path` for its version, all at once.
pub async fn probe(path: &str, home: &Path) -> Vec<Tool> {
    let asks = TOOLS.iter().map(|spec| async move {
        let found = spec.commands.iter().find_map(|c| find_on(path, c).map(|p| (*c, p)));
        let (command, version) = match found {
            Some((name, bin)) => (Some(name.to_owned()), version_of(&bin, spec.args, path, home).await),
            None => (None, None),
        };
        Tool { name: spec.name, command, version, purpose: spec.purpose }
    });
    futures_util::future::join_all(asks).await
}

async fn version_of(bin: &Path, args: &[&str], path: &str, home: &Path) -> Option<String> {
    let output = tokio::time::timeout(
        PROBE_TIMEOUT,
        tokio::process::Command::new(bin)
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .env("LANG", "C.UTF-8")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    if !output.status.success() {
        return None;
    }
    let mut text = output.stdout;
    if text.iter().all(u8::is_ascii_whitespace) {
        text = output.stderr;
    }
    text.truncate(PROBE_MAX_BYTES);
    version_in(&String::from_utf8_lossy(&text))
}

/// The version number in a tool's first line: "Python 3.11.2", "jq-1.6", "v22.1.0",
/// "UnZip 6.00 of 20 April 2009", "Chromium 156.0.8078.114 built on Debian" → the number.
fn version_in(text: &str) -> Option<String> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    first
        .split(|c: char| c.is_whitespace() || c == '-' || c == ',')
        .map(|w| w.strip_prefix('v').unwrap_or(w))
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_tools_own_words() {
        for (text, want) in [
            ("Python 3.11.2\n", "3.11.2"),
            ("jq-1.6\n", "1.6"),
            ("v22.12.0\n", "22.12.0"),
            ("9.2.0\n", "9.2.0"),
            ("3.40.1 2022-12-28 14:03:47 df5c253c0b3dd24916e4ec7cf77d3db5294cc9fd\n", "3.40.1"),
            ("ripgrep 13.0.0\n-SIMD -AVX (compiled)\n", "13.0.0"),
            ("UnZip 6.00 of 20 April 2009, by Debian. Original by Info-ZIP.\n", "6.00"),
            ("git version 2.39.5\n", "2.39.5"),
            ("curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1\n", "7.88.1"),
            ("\nChromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)\n", "156.0.8078.114"),
        ] {
            assert_eq!(version_in(text).as_deref(), Some(want), "{text:?}");
        }
        assert_eq!(version_in("no version here\n"), None);
    }

    #[test]
    fn the_path_is_curated_and_leaves_the_servers_shims_out() {
        let path = agent_path(&[PathBuf::from("/opt/agent-clis/bin"), PathBuf::from("/usr/bin")]);
        let dirs: Vec<&str> = path.split(':').collect();
        assert!(dirs.contains(&"/opt/agent-clis/bin"), "{path}");
        assert_eq!(dirs.iter().filter(|d| **d == "/usr/bin").count(), 1, "no folder twice: {path}");
        assert!(SYSTEM_PATH.iter().all(|d| dirs.contains(d)), "{path}");
        assert_eq!(dirs.len(), SYSTEM_PATH.len() + 2, "the binary's folder, the CLIs' and the system's: {path}");
        assert!(!path.contains("shims"), "{path}");
    }

    #[test]
    fn a_binary_reached_by_a_link_gives_the_links_folder_and_its_own() {
        let dir = tempfile::tempdir().expect("tmp");
        let (bin, pkg) = (dir.path().join("bin"), dir.path().join("pkg"));
        std::fs::create_dir_all(&bin).expect("bin");
        std::fs::create_dir_all(&pkg).expect("pkg");
        std::fs::write(pkg.join("cli.js"), "").expect("cli");
        std::os::unix::fs::symlink("../pkg/cli.js", bin.join("claude")).expect("link");
        let canon = |p: &Path| std::fs::canonicalize(p).expect("canon");
        let dirs = dirs_of(&bin.join("claude"));
        assert_eq!(dirs.len(), 2, "{dirs:?}");
        assert_eq!((canon(&dirs[0]), canon(&dirs[1])), (canon(&bin), canon(&pkg)));
        assert!(dirs_of(Path::new("surely-no-such-binary-here")).is_empty());
    }

    #[tokio::test]
    async fn a_tool_is_found_and_asked_and_a_missing_one_says_so() {
        let dir = tempfile::tempdir().expect("tmp");
        let bin = dir.path().join("jq");
        std::fs::write(&bin, "#!/bin/sh\necho jq-9.9\n").expect("write");
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        let tools = probe(&dir.path().display().to_string(), dir.path()).await;
        let jq = tools.iter().find(|t| t.name == "jq").expect("jq listed");
        assert_eq!((jq.command.as_deref(), jq.version.as_deref()), (Some("jq"), Some("9.9")));
        let python = tools.iter().find(|t| t.name == "python3").expect("python3 listed");
        assert_eq!((python.command.as_deref(), python.version.as_deref()), (None, None));
        assert_eq!(tools.len(), TOOLS.len());
    }
}
