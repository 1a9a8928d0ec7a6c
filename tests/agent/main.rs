//! The agent room: stacks and middleware, messages, structured answers, streaming,
//! compaction and fallback models. `fallback` installs this binary's one global tracing
//! subscriber and reads only its own thread's spans.

#[path = "../providers_support/mod.rs"]
mod providers_support;
#[path = "../scripted_tools/mod.rs"]
mod scripted_tools;

mod compaction;
mod fallback;
mod message;
mod stack;
mod stream;
mod structured;
mod turn_middleware;
