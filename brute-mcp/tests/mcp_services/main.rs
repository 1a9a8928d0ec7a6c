//! brute-mcp's integration tests that need npm packages (the MCP conformance suite and
//! the third-party test server, in `.ci/npm`): the services tier only
//! (`required-features = ["services"]`, `tests/README.md` of the repository), one
//! module per former test binary, in one binary.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod third_party_server;
