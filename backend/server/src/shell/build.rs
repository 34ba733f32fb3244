//! One shell build: `vite build` in the server's copy of the source, run like the agent's own
//! processes (own group and tree, whitelisted environment, the agent's sandbox and memory
//! ceiling: the build runs the agent's code), bounded in time and in the output kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::agent::process;
use crate::agent::sandbox::Sandbox;
use crate::providers::Providers;

/// A build running longer is killed with its group.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(300);
/// The tail of the build's output kept (what the agent is told).
pub const MAX_OUTPUT_BYTES: usize = 16 * 1024;
/// How long output still drains after the build's process ended.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// What a build needs of the server.
#[derive(Clone)]
pub struct Builder {
    pub sandbox: Sandbox,
    pub providers: Arc<Providers>,
}

/// How a build ended.
#[derive(Debug)]
pub struct Outcome {
    pub ok: bool,
    /// Its output's last [`MAX_OUTPUT_BYTES`] (a note first when more was cut).
    pub output: String,
}

impl Builder {
    /// Runs `vite build` in `work` (whose `node_modules` links to the toolchain's packages, and which holds an
    /// empty `.tmp/`) into `out`.
    pub async fn run(&self, work: &Path, out: &Path, node_modules: &Path) -> Result<Outcome, String> {
        let path = self.providers.agent_path();
        let node = find_on_path("node", &path).ok_or("node is not installed on this server.")?;
        let vite = node_modules.join("vite/bin/vite.js");
        if !vite.is_file() {
            return Err(format!("vite is not installed in {} (MOBIUS_SHELL_NODE_MODULES).", node_modules.display()));
        }
        let env: Vec<(String, String)> = vec![
            ("PATH".into(), path.clone()),
            ("HOME".into(), work.display().to_string()),
            ("TMPDIR".into(), work.join(".tmp").display().to_string()),
            ("LANG".into(), "C.UTF-8".into()),
            ("NODE_ENV".into(), "production".into()),
            ("NO_COLOR".into(), "1".into()),
            ("CI".into(), "1".into()),
        ];
        let rules = self
            .sandbox
            .ruleset(&self.sandbox.shell_build_grants(work, out, node_modules, &path))
            .map_err(|e| e.client_message().unwrap_or_else(|| e.to_string()))?;
        let args = [
            vite.display().to_string(),
            "build".into(),
            "--outDir".into(),
            out.display().to_string(),
            "--emptyOutDir".into(),
        ];
        let spawned = process::spawn_job(
            &node,
            &args,
            work,
            &env,
            Some(self.providers.trees()),
            rules,
            self.providers.memory().prepare(),
        )
        .map_err(|e| format!("The build could not be started: {e}"))?;
        let mut reader = tokio::spawn(tail(spawned.output));
        let mut child = spawned.process;
        let status = tokio::select! {
            status = child.wait() => Some(status),
            () = tokio::time::sleep(BUILD_TIMEOUT) => None,
        };
        child.terminate().await;
        let output = match tokio::time::timeout(DRAIN_WAIT, &mut reader).await {
            Ok(Ok(text)) => text,
            _ => {
                reader.abort();
                String::new()
            }
        };
        Ok(match status {
            None => Outcome {
                ok: false,
                output: format!("{output}\nThe build ran longer than {} s and was stopped.", BUILD_TIMEOUT.as_secs()),
            },
            Some(status) => {
                let ok = status.is_some_and(|s| s.success());
                Outcome { ok, output }
            }
        })
    }
}

/// Reads everything, keeps the last [`MAX_OUTPUT_BYTES`].
async fn tail(mut output: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut chunk = vec![0u8; 8192];
    loop {
        match output.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > MAX_OUTPUT_BYTES * 2 {
                    kept.drain(..kept.len() - MAX_OUTPUT_BYTES);
                    cut = true;
                }
            }
        }
    }
    if kept.len() > MAX_OUTPUT_BYTES {
        kept.drain(..kept.len() - MAX_OUTPUT_BYTES);
        cut = true;
    }
    let text = String::from_utf8_lossy(&kept).into_owned();
    if cut { format!("[… earlier output cut]\n{text}") } else { text }
}

fn find_on_path(name: &str, path: &str) -> Option<PathBuf> {
    path.split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .chain([PathBuf::from("/usr/local/bin").join(name), PathBuf::from("/usr/bin").join(name)])
        .find(|p| p.is_file())
}
