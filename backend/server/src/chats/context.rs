//! `GET /api/chats/{id}/context`: what the agent was given for a chat, for the owner to
//! inspect (the info sheet's "What the agent was given"). Read-only, owner-only (an agent's,
//! an app's or an embedded chat's token is refused by the gate and the `Owner` extractor),
//! every text masked of what looks like a credential (`redact.rs`) and cut to a bound.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use crate::agent::sandbox::SandboxState;
use crate::auth::Owner;
use crate::db;
use crate::error::{Domain, Result};
use crate::protocol::{ChatId, ProviderKind};
use crate::redact::redact_text;
use crate::state::AppState;

/// Most characters of one text (the prompt, the memory block, the summary) the answer carries.
pub const MAX_CONTEXT_TEXT_CHARS: usize = 48_000;

/// A text as the agent was given it, masked and cut.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ContextText {
    pub text: String,
    /// Characters of the whole text (before any cut).
    pub chars: usize,
    /// The text was longer than [`MAX_CONTEXT_TEXT_CHARS`]: `text` is its beginning.
    pub cut: bool,
}

impl ContextText {
    fn of(text: &str) -> Self {
        let masked = redact_text(text);
        let chars = masked.chars().count();
        let cut = chars > MAX_CONTEXT_TEXT_CHARS;
        let text = if cut { masked.chars().take(MAX_CONTEXT_TEXT_CHARS).collect() } else { masked };
        Self { text, chars, cut }
    }
}

/// A connector the chat's turns are given, by name, and the tools they may call unasked.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ContextConnector {
    #[cfg_attr(test, ts(type = "number"))]
    pub id: i64,
    pub name: String,
    pub auto_approved: Vec<String>,
}

/// What the agent was given for one chat.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AgentContext {
    pub chat_id: String,
    /// The chat's provider, else the owner's default (`None`: no provider is set up).
    #[cfg_attr(test, ts(as = "Option<crate::protocol::ProviderKind>"))]
    pub provider: Option<ProviderKind>,
    /// The model the next turn asks for: the chat's pick, else the owner's default for the
    /// provider; `None`: the CLI's own default.
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The system prompt: the chat's pinned snapshot (`pinned`), or, before the first turn,
    /// the one it would be pinned with now.
    pub system_prompt: ContextText,
    pub pinned: bool,
    /// The `<app_context>` block, when an app opened the chat.
    pub app_context: Option<String>,
    /// The memory block as injected (the owner's memory file and recent chats' digests);
    /// `None` when memory was off.
    pub memory: Option<ContextText>,
    /// The summary a new session starts from (after a compaction or a provider switch).
    pub handoff: Option<ContextText>,
    /// The summary has not been given yet: the next turn starts from it.
    pub handoff_pending: bool,
    pub connectors: Vec<ContextConnector>,
    /// The server's sandbox, as Settings shows it.
    pub sandbox: SandboxState,
    /// Folders of the data directory a turn of this chat may read and write, relative to it.
    pub read_write: Vec<String>,
    /// Folders of the data directory it may only read.
    pub read: Vec<String>,
}

/// The `<app_context>…</app_context>` block of a prompt.
fn app_block(prompt: &str) -> Option<&str> {
    let start = prompt.find("<app_context>")?;
    let end = prompt[start..].find("</app_context>")? + start + "</app_context>".len();
    Some(&prompt[start..end])
}

/// The memory block of a prompt (it comes last).
fn memory_block(prompt: &str) -> Option<&str> {
    prompt.rfind(crate::recall::MEMORY_HEADING).map(|at| prompt[at..].trim_start_matches('\n'))
}

/// `path` relative to `data_dir`, or `None` outside it.
fn relative(data_dir: &std::path::Path, path: &std::path::Path) -> Option<String> {
    path.strip_prefix(data_dir).ok().map(|p| p.display().to_string())
}

#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %id))]
pub async fn agent_context(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<AgentContext>> {
    let id = ChatId::parse(&id).ok_or(Domain::ChatNotFound)?;
    let read = &state.db.read;
    let chat = db::chats::get(read, &id).await?.filter(|c| c.deleted_at.is_none()).ok_or(Domain::ChatNotFound)?;
    let agents = &state.agents;
    let pinned = match &chat.system_prompt_id {
        Some(prompt) => db::chats::prompt_content(read, prompt).await?,
        None => None,
    };
    let (prompt, is_pinned) = match pinned {
        Some(p) => (p, true),
        None => (crate::agent::turn::compose_for(agents, &chat).await?, false),
    };
    let provider = match chat.provider {
        Some(p) => Some(p),
        None => state.providers.default_provider(read).await?,
    };
    let settings = crate::agent::settings::AgentSettings::parse(chat.agent_settings.as_deref());
    let defaults = crate::agent::models::AgentDefaults::parse(db::owner::agent_defaults(read).await?.as_deref());
    let pick = match provider {
        Some(p) => settings.pick().over(defaults.of(p)),
        None => settings.pick(),
    };
    let connectors = crate::connectors::for_chat(read, &id)
        .await?
        .into_iter()
        .map(|c| ContextConnector { id: c.id, name: c.name, auto_approved: c.auto_approved })
        .collect();
    let data_dir = &agents.data_dir;
    let mut read_write: Vec<String> = crate::agent::sandbox::DATA_READ_WRITE.iter().map(|d| (*d).to_owned()).collect();
    if let Some(p) = provider {
        read_write.push(format!("cli-auth/{}", p.id()));
    }
    read_write.extend(relative(data_dir, &crate::agent::workspace::path(data_dir, &id)));
    let read_only: Vec<String> = relative(data_dir, &agents.uploads.chat_dir(&id)).into_iter().collect();
    Ok(Json(AgentContext {
        chat_id: id.to_string(),
        provider,
        model: pick.model,
        effort: pick.effort,
        app_context: app_block(&prompt).map(redact_text),
        memory: memory_block(&prompt).map(ContextText::of),
        system_prompt: ContextText::of(&prompt),
        pinned: is_pinned,
        handoff: chat.handoff.as_deref().map(ContextText::of),
        handoff_pending: chat.handoff.is_some() && chat.session_id.is_none(),
        connectors,
        sandbox: agents.sandbox.state().clone(),
        read_write,
        read: read_only,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_are_found_in_a_composed_prompt() {
        let prompt = "Core.\n<app_context>\nThis chat was opened by the app \"Todo\".\n</app_context>\n\n## Skills\n\
                      \n## Memory\n\nWhat follows is private context.\n<owner_memory>\nLikes tea.\n</owner_memory>\n";
        assert_eq!(app_block(prompt), Some("<app_context>\nThis chat was opened by the app \"Todo\".\n</app_context>"));
        let memory = memory_block(prompt).expect("memory");
        assert!(memory.starts_with("## Memory") && memory.contains("Likes tea."), "{memory}");
        assert_eq!(app_block("no app"), None);
        assert_eq!(memory_block("no memory"), None);
    }

    #[test]
    fn long_texts_are_cut_and_say_so() {
        let long = "é".repeat(MAX_CONTEXT_TEXT_CHARS + 5);
        let shown = ContextText::of(&long);
        assert!(shown.cut);
        assert_eq!(shown.chars, MAX_CONTEXT_TEXT_CHARS + 5);
        assert_eq!(shown.text.chars().count(), MAX_CONTEXT_TEXT_CHARS);
        let short = ContextText::of("token=abc");
        assert_eq!((short.text.as_str(), short.cut), ("token=[redacted]", false));
    }
}
