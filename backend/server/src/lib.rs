//! Möbius: a self-hosted platform where one owner chats with a coding agent that builds
//! mini-apps. This crate is both the HTTP server and the small CLI the agent calls.
//! Start at [`app`] (composition root) and `ARCHITECTURE.md` (the map).

pub mod agent;
pub mod api;
pub mod app;
pub mod apps;
pub mod auth;
pub mod backup;
pub mod browser;
pub mod cadence;
pub mod chats;
pub mod cli;
pub mod config;
pub mod connectors;
pub mod db;
pub mod error;
pub mod events;
pub mod housekeeping;
pub mod locks;
pub mod memory;
pub mod net;
pub mod ops;
pub mod platform;
pub mod protocol;
pub mod providers;
pub mod published;
pub mod push;
pub mod recall;
pub mod recovery;
pub mod redact;
pub mod safe_fs;
pub mod schedules;
pub mod search;
pub mod shell;
pub mod shutdown;
pub mod skills;
pub mod state;
pub mod storage;
pub mod telemetry;
pub mod theme;
pub mod uploads;
pub mod web;
pub mod writer;

pub use error::{Error, Result};
