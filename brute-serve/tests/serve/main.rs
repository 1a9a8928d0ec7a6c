//! brute-serve's integration tests of the offline tier, one module per former test
//! binary, in one binary: linking a binary per file dominated the suite's time. The
//! single tests that need a service are ignored without the `services` feature
//! (`tests/README.md` of the repository); the binary whose every test needs one is
//! `tests/serve_services/`.
//!
//! A test that runs this binary again names itself by its full name
//! (`support::harness_name`).

#[path = "../../../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../support/mod.rs"]
mod support;

mod a2a;
mod admin;
mod approvals;
mod auth_prefix;
mod chat_completions;
mod chat_tools;
mod client_errors;
mod errors;
mod idempotency;
mod openapi;
mod remote_agent;
mod serve;
mod served_handoff;
mod store_timeout;
