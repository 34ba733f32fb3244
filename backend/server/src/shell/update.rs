//! What a platform update of the shell leaves to do once the server runs (`Shell::take_source` merged
//! the new stock source under the owner's edits): a conflict opens the chat in which the agent
//! resolves it ("Resolve platform update conflicts"), and the previous build keeps serving; a
//! clean merge into the source of the build served rebuilds it (the usual trial follows), and
//! if that build fails, a chat gets its errors.

use tracing::{info, warn};

use super::Resolving;
use crate::state::AppState;

/// The resolver chat's title (the original's).
pub const RESOLVER_TITLE: &str = "Resolve platform update conflicts";
/// The chat's title when the merged source does not build.
pub const REBUILD_FAILED_TITLE: &str = "Fix the shell after the platform update";

/// Runs once the server is up (`app.rs`): the source seeded and the new stock taken into it
/// (off the boot path), the watcher started, then what the merge left to do.
pub async fn after_boot(state: AppState) {
    let shell = state.shell.clone();
    match tokio::task::spawn_blocking(move || shell.take_source()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!(error = %e, "the shell's record could not be saved after the platform update"),
        Err(e) => warn!(error = %e, "taking the stock shell source stopped"),
    }
    if let Some(quiet) = state.config.shell_watch
        && state.shell.status().editable
    {
        super::watch::start(state.shell.clone(), state.agents.clone(), quiet).await;
    }
    state.shell.mark_prepared();
    if let Some(resolving) = state.shell.resolver_to_open() {
        match open_resolver(&state, &resolving).await {
            Ok(chat) => {
                info!(chat.id = %chat, "a chat was opened to resolve the platform update's conflicts");
                if let Err(e) = state.shell.set_resolver_chat(chat).await {
                    warn!(error = %e, "the resolver chat could not be recorded");
                }
            }
            Err(e) => warn!(error = %e, "the chat resolving the platform update could not be opened"),
        }
        return;
    }
    match state.shell.take_rebuild_after_update().await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            warn!(error = %e, "the shell's record could not be saved");
            return;
        }
    }
    match state.shell.rebuild(None).await {
        Ok(built) => info!(build = built.build.n, "the shell was rebuilt after the platform update"),
        Err(e) => {
            warn!(error = %e, "the shell does not build after the platform update; the previous build stays");
            let why = e.client_message().unwrap_or_else(|| e.to_string());
            let content = "The platform was updated and my shell edits were merged onto its new stock source, \
                 but the result does not build. Please fix it and rebuild the shell."
                .to_owned();
            let context = format!(
                "<platform_update_build_failed>\n\
                 The new stock shell source was merged cleanly with the owner's edits in \
                 $MOBIUS_DATA_DIR/platform/shell/ (the merge is there as uncommitted changes), but the build \
                 failed, so the previous build keeps serving. Fix the source (keep the owner's edits), run \
                 `\"$MOBIUS_BIN\" shell rebuild`, and once it builds commit the result. The build said:\n{why}\n\
                 </platform_update_build_failed>"
            );
            if let Err(e) = crate::chats::open_primed_chat(&state, REBUILD_FAILED_TITLE, content, context).await {
                warn!(error = %e, "the chat fixing the shell's build could not be opened");
            }
        }
    }
}

/// Opens the resolver chat: the owner's message says what conflicted, the agent's context
/// quotes the files as they are now and says how to finish.
async fn open_resolver(state: &AppState, resolving: &Resolving) -> crate::error::Result<String> {
    let shell = state.shell.clone();
    let markers = resolving.markers.clone();
    let quoted =
        tokio::task::spawn_blocking(move || shell.source_dir().map(|dir| super::stock::quoted(&dir, &markers)))
            .await
            .map_err(|e| crate::error::Error::Internal(format!("shell task: {e}")))??;
    let mut all: Vec<&str> = resolving.markers.iter().chain(&resolving.kept).map(String::as_str).collect();
    all.sort_unstable();
    let content = format!(
        "The platform was updated and its new stock shell changes the same parts as my own shell edits \
         ({}). Please merge them: keep what both meant, then rebuild the shell.",
        all.join(", ")
    );
    let mut context = String::from(
        "<platform_update_conflict>\n\
         The platform was updated and the stock shell's source changed. The owner's edits in \
         $MOBIUS_DATA_DIR/platform/shell/ were merged onto the new stock source; the merge is there as \
         uncommitted changes of that git repository. The previous shell build keeps serving until a rebuild \
         succeeds, and a rebuild is refused while a conflict marker is left.\n",
    );
    if !resolving.markers.is_empty() {
        context.push_str(&format!(
            "These files hold git conflict markers (<<<<<<< your edits, =======, >>>>>>> new stock): {}. \
             Edit each so that it keeps both intents and has no marker left.\n",
            resolving.markers.join(", ")
        ));
    }
    if !resolving.kept.is_empty() {
        context.push_str(&format!(
            "These files were deleted on one side and changed on the other (or are binary); the owner's side \
             was kept: {}. Compare with the new stock (`git diff` shows what changed) and decide.\n",
            resolving.kept.join(", ")
        ));
    }
    context.push_str(
        "Then run `\"$MOBIUS_BIN\" shell rebuild` (it fails with the build's errors if something is wrong; fix \
         and run it again), and once it builds commit the merge (`git add -A && git commit -m \"Merge the \
         platform update\"`). The skill `shell` says more.\n",
    );
    context.push_str(&quoted);
    context.push_str("</platform_update_conflict>");
    let (chat, started) = crate::chats::open_primed_chat(state, RESOLVER_TITLE, content, context).await?;
    if !started {
        warn!(chat.id = %chat, "no provider can run a turn: the resolver chat waits for the owner");
    }
    Ok(chat.to_string())
}
