//! brute-mcp's integration tests of the offline tier, one module per former test
//! binary, in one binary: linking a binary per file dominated the suite's time. The
//! tests that need npm packages are `tests/mcp_services/` (`tests/README.md` of the
//! repository).

#[path = "../support/mod.rs"]
mod support;

mod agent_server_errors;
mod error_cases;
mod handshake;
mod https;
mod legacy_metadata;
mod reauthorize;
mod resources;
mod rich_results;
mod server;
