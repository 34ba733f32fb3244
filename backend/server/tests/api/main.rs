//! API tests: one binary, each test against a real server on 127.0.0.1:0 with a temp DATA_DIR.

mod apps;
mod auth;
mod backup;
mod chat_list;
mod chats;
mod containment;
mod exposure;
mod fixture;
mod helpers;
mod lifecycle;
mod memory;
mod ops;
mod planted;
mod platform;
mod providers;
mod push;
mod release_db;
mod runtime;
mod schedules;
mod search;
mod storage;
mod telemetry;
mod uploads;
mod web;
mod writer;
