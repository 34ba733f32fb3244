//! A quiet turn: one short, tool-less provider run outside any chat's transcript (a chat's
//! note). It goes through the same seam and process machinery as a chat's turns (so it gets
//! their process group, environment whitelist and limits), has no agent token, runs in its own
//! empty folder, runs confined by the agent's sandbox (that folder granted besides the usual
//! grants), and is bounded in time (`timeout`) and in output ([`MAX_QUIET_OUTPUT_BYTES`]).
//! Dropping it (or its task being aborted) kills the CLI.

use std::path::Path;
use std::time::Duration;

use super::{AgentEvent, ApprovalPolicy, FinishStatus, ProviderKind, TurnRequest};
use crate::error::{Error, Result};
use crate::protocol::ChatId;
use crate::providers::Providers;

/// Most text a quiet turn may answer; the turn is ended once it has said this much.
pub const MAX_QUIET_OUTPUT_BYTES: usize = 16 * 1024;

/// What a quiet turn asks, and how long it may take.
pub struct QuietAsk {
    pub system_prompt: String,
    pub prompt: String,
    pub timeout: Duration,
}

/// Runs a quiet turn of `kind` for `chat_id` and answers its text.
pub async fn run(
    providers: &Providers,
    sandbox: &super::sandbox::Sandbox,
    kind: ProviderKind,
    chat_id: &ChatId,
    data_dir: &Path,
    ask: QuietAsk,
) -> Result<String> {
    let QuietAsk { system_prompt, prompt, timeout } = ask;
    let credentials = providers.prepare_cli(kind)?;
    let cwd = data_dir.join("run").join("quiet");
    tokio::fs::create_dir_all(&cwd).await?;
    let env = providers.agent_env(kind, chat_id, "quiet", "", credentials)?;
    let var = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or_default();
    let mut grants =
        sandbox.grants(kind, providers.bin(kind), Path::new(var("HOME")), Path::new(var("TMPDIR")), var("PATH"));
    grants.read_write.push(std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone()));
    let confine = sandbox.ruleset(&grants)?;
    let provider = providers.provider(kind);
    let request = TurnRequest {
        prompt,
        files: Vec::new(),
        system_prompt,
        resume: None,
        model: provider.cheapest_model().map(str::to_owned),
        effort: None,
        cwd,
        env,
        approval: ApprovalPolicy::Full,
        plan: false,
        trees: providers.trees().clone(),
        tools: false,
        confine,
        keep: None,
        memory: providers.memory().clone(),
        mcp: Vec::new(),
    };
    let mut turn = provider.start(request)?;
    let collect = async {
        // Text items in order; a final text replaces what its deltas said.
        let mut items: Vec<(String, String)> = Vec::new();
        let mut size = 0usize;
        while let Some(event) = turn.events.recv().await {
            match event {
                AgentEvent::Text { item_id, delta } => {
                    size += delta.len();
                    match items.iter_mut().find(|(id, _)| *id == item_id) {
                        Some((_, text)) => text.push_str(&delta),
                        None => items.push((item_id, delta)),
                    }
                }
                AgentEvent::TextFinal { item_id, text } => {
                    size += text.len();
                    match items.iter_mut().find(|(id, _)| *id == item_id) {
                        Some((_, old)) => *old = text,
                        None => items.push((item_id, text)),
                    }
                }
                // Dropping the reply denies whatever it asked.
                AgentEvent::Ask { .. } => {}
                AgentEvent::Finished(finish) => {
                    return match finish.status {
                        FinishStatus::Completed => Ok(items),
                        _ => Err(Error::Internal(format!(
                            "the quiet turn ended without an answer: {}",
                            finish.error.unwrap_or_default()
                        ))),
                    };
                }
                _ => {}
            }
            if size > MAX_QUIET_OUTPUT_BYTES {
                return Ok(items);
            }
        }
        Err(Error::Internal("the quiet turn stopped without finishing".into()))
    };
    let items = tokio::time::timeout(timeout, collect)
        .await
        .map_err(|_| Error::Internal("the quiet turn took too long".into()))??;
    let text: String = items.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join("\n");
    Ok(crate::recall::cut_bytes(&text, MAX_QUIET_OUTPUT_BYTES).to_owned())
}
