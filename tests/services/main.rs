//! Tests whose every case needs a service (PostgreSQL): built and run only in the services
//! tier (`cargo xtask test`, or `cargo test --features services --test services`).

#[path = "../kill_support/mod.rs"]
mod kill_support;
#[path = "../postgres_support/mod.rs"]
mod postgres_support;
#[path = "../session_support/mod.rs"]
mod session_support;

mod session_reconnect;
mod session_workers;
mod tool_result_parts;
