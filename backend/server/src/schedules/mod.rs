//! Schedules: app jobs and scheduled agent turns, fired on time by one in-process task.
//!
//! - `crate::cadence`: cron expressions in a time zone, with the daylight-saving rules (a leaf:
//!   app manifests check theirs with it too).
//! - `runner.rs`: the loop (sleep until the next due time, plan, fire), missed runs and overlap.
//! - `handle.rs`: [`Scheduler`], what routes and other parts ask of it (run now, a one-off turn,
//!   stop an app's job), and the loop's backend in the server.
//! - `jobs.rs`: an app's job process (environment, token, sandbox, group, time limit);
//!   `view.rs`: the folder its `DATA_DIR` names (its run's token file, its `cron-logs/`);
//!   `output.rs`: its bounded output and rotated log.
//! - `turns.rs`: a scheduled agent turn through the normal turn path; `agent/schedule_ends.rs`:
//!   how its end comes back from `agent/turn.rs`.
//! - `context.rs`: what they share (slots, the clock, closing a run and telling the owner).
//! - `routes.rs`: `/api/schedules…` and the original's app-job routes.
//!
//! Schedules live in SQLite (`db/schedules.rs`); every write goes through the writer
//! (`writer/schedules.rs`), which wakes the loop after each commit (`Hub::watch_schedules`).

mod context;
mod handle;
pub mod jobs;
mod output;
pub mod routes;
mod runner;
mod turns;
pub mod view;

pub use handle::{OnceTurn, RunStarted, Scheduler};
pub use output::read_log;
