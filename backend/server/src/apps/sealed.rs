//! How app secrets are sealed: the context each is bound to, and the start-up step that
//! seals again, under the data key, what an earlier release sealed under a key derived from
//! the (now rotating) signing key.

use tracing::warn;

use crate::auth::jwt::Keys;
use crate::error::Result;
use crate::writer::{WriteCommand, WriterHandle};

/// What secret `name` of app `id` is bound to when sealed.
pub fn context(id: i64, name: &str) -> String {
    format!("app-secret:{id}:{name}")
}

/// Seals every secret the data key cannot open but the legacy key can again with the data
/// key. Runs at start-up, before any route can rotate the signing key (the legacy key is
/// derived from the signing key as this start-up found it), so an interrupted run is finished
/// by the next one. Returns how many were sealed again.
pub async fn reseal_legacy(secrets: Vec<(i64, String, Vec<u8>)>, writer: &WriterHandle, keys: &Keys) -> Result<usize> {
    let mut resealed = 0;
    for (app_id, name, sealed) in secrets {
        let context = context(app_id, &name);
        if keys.open(&context, &sealed).is_ok() {
            continue;
        }
        let Ok(plain) = keys.open_legacy(&context, &sealed) else {
            warn!(app_id, "an app secret opens with neither the data key nor the legacy key; left as it is");
            continue;
        };
        let sealed = keys.seal(&context, &plain)?;
        writer.call(|ack| WriteCommand::AppSecretPut { app_id, name, sealed, max: i64::MAX, ack }).await?;
        resealed += 1;
    }
    Ok(resealed)
}
