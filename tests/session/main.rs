//! The session room: stores, leases, durability across kills, forks, retention, cost and
//! budgets on JSONL, SQLite and (in the services tier) PostgreSQL. Tests that kill a
//! worker re-run this binary with `--exact` and the test's full name
//! (`kill_support::test_name`).

#[path = "../kill_support/mod.rs"]
mod kill_support;
#[path = "../postgres_support/mod.rs"]
mod postgres_support;
#[path = "../scripted_tools/mod.rs"]
mod scripted_tools;
#[path = "../session_support/mod.rs"]
mod session_support;

mod approval;
mod budget;
mod cost;
mod session_cancel;
mod session_crash;
mod session_durability;
mod session_failed_turn;
mod session_fork;
mod session_log;
mod session_retention;
mod session_sqlite_crash;
mod session_store;
mod session_user_terminal_crash;
mod session_validate;
mod stream_atomicity;
mod stream_drop;
mod tool_call_ids;
