//! Waiting for shutdown: the flag every long-lived loop (listener, streams, scheduler) ends on.

use tokio::sync::watch;

/// Resolves once shutdown has begun.
pub async fn stopping(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}
