//! brute-serve's integration tests whose every test needs a service (PostgreSQL,
//! Chromium and chromedriver, Node and the AG-UI client, nginx and root): the services
//! tier only (`required-features = ["services"]`, `tests/README.md` of the
//! repository), one module per former test binary, in one binary.
//!
//! A scale-out run holds [`ALONE`] for writing, every other test for reading.

#[path = "../../../tests/postgres_support/mod.rs"]
mod postgres_support;
#[cfg(unix)]
#[path = "../scale/mod.rs"]
mod scale;
#[path = "../support/mod.rs"]
mod support;
#[cfg(unix)]
#[path = "../support/webdriver.rs"]
mod webdriver;

mod agui;
mod scale_out;
mod two_servers;
mod web_chat;

/// Held for writing by each scale-out run, for its whole length, and for reading by
/// every other test of this binary: a run measures itself (its takeovers against a
/// bound) on two cores it assumes it has to itself, as it had in a binary of its own,
/// and a browser or Node beside it would take them.
static ALONE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());
