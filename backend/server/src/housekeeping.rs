//! Clean-up of tombstones: chats and apps deleted longer ago than their recovery window are
//! removed for good, with everything they own on disk: at start, then every
//! [`Config::purge_every`](crate::config::Config::purge_every) (an hour) until shutdown. A purged chat's folders go with it: its files
//! (`DATA_DIR/uploads/<chat>`), its overflow text (`agent-output/<chat>`) and the agent's
//! scratch folder (`agent-scratch/<chat>`) and its workspace (`workspace/<chat>`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::apps::apply::Apps;
use crate::db::now_ms;
use crate::uploads::Uploads;
use crate::writer::{WriteCommand, WriterHandle};

/// Purges tombstones now and then every `every`, until shutdown begins.
pub async fn run(
    writer: WriterHandle,
    apps: Arc<Apps>,
    uploads: Arc<Uploads>,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        purge_tombstones(writer.clone(), apps.clone(), uploads.clone()).await;
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = crate::shutdown::stopping(&mut shutdown) => return,
        }
    }
}

/// Purges expired chat and app tombstones.
pub async fn purge_tombstones(writer: WriterHandle, apps: Arc<Apps>, uploads: Arc<Uploads>) {
    let chat_cutoff = now_ms() - crate::chats::RECOVERY_WINDOW_MS;
    match writer.call(|ack| WriteCommand::PurgeDeleted { cutoff: chat_cutoff, ack }).await {
        Ok(purged) if purged.is_empty() => {}
        Ok(purged) => {
            // The rows went with the chats (cascade); their files follow.
            for chat_id in &purged {
                uploads.remove_chat(chat_id).await;
                for folder in
                    [crate::agent::fold::OVERFLOW_DIR, "agent-scratch", crate::agent::workspace::WORKSPACE_DIR]
                {
                    let dir = apps.data_dir.join(folder).join(chat_id.as_str());
                    if let Err(e) = tokio::fs::remove_dir_all(&dir).await
                        && e.kind() != std::io::ErrorKind::NotFound
                    {
                        tracing::warn!(chat.id = %chat_id.as_str(), folder, error = %e, "a purged chat's folder could not be removed");
                    }
                }
            }
            tracing::info!(chats = purged.len(), "deleted chats purged");
        }
        Err(e) => tracing::warn!(error = %e, "purging deleted chats failed"),
    }
    let app_cutoff = now_ms() - crate::apps::apply::RECOVERY_WINDOW_MS;
    // An app uninstalled with its data kept keeps its row (and so its id and data) for a later
    // install of the same app; the others go whole.
    let expired = crate::db::apps::expired(&apps.read, app_cutoff).await.unwrap_or_default();
    let keep: Vec<i64> = expired
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| {
            std::fs::read_dir(crate::storage::app_data_dir(&apps.data_dir, *id))
                .is_ok_and(|mut entries| entries.next().is_some())
        })
        .collect();
    let purged = match writer.call(|ack| WriteCommand::AppPurge { cutoff: app_cutoff, keep: keep.clone(), ack }).await {
        Ok(purged) => purged,
        Err(e) => {
            tracing::warn!(error = %e, "purging deleted apps failed");
            return;
        }
    };
    for (id, slug) in purged {
        let _lock = apps.locks.lock(&slug).await;
        let (remover, gone) = (apps.clone(), slug.clone());
        let _ = tokio::task::spawn_blocking(move || remover.remove_sources(&gone)).await;
        if !keep.contains(&id)
            && let Err(e) = crate::storage::remove_app_data(apps.storage.clone(), &apps.data_dir, id).await
        {
            tracing::warn!(app.id = id, error = %e, "removing a purged app's data failed");
        }
        if let Ok(mut entries) = tokio::fs::read_dir(apps.compiled_dir()).await {
            let prefix = format!("app-{id}-");
            while let Ok(Some(entry)) = entries.next_entry().await {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = tokio::fs::remove_file(entry.path()).await;
                }
            }
        }
        crate::apps::assets::files::remove(&apps.data_dir, id).await;
        tracing::info!(app.id = id, slug, "deleted app purged");
    }
    // A purged app's published page went with its row (cascade); its copies follow.
    crate::published::sweep(&apps.data_dir, &apps.read).await;
}
