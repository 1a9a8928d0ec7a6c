//! The documentation room: every example runs, the docs name what the code has, the
//! architecture's rules hold and brute keeps no process-global state.

#[path = "../providers_support/mod.rs"]
mod providers_support;
// The chat example, whose functions `examples_chat` runs (its `main` is not a test).
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/chat.rs"]
mod chat;

mod architecture;
mod docs_match_code;
mod examples;
mod examples_chat;
mod examples_spec;
mod no_globals;
