//! The providers room: the HTTP providers' wire formats, limits, faults, retries and
//! redaction, against local servers on 127.0.0.1. One module per former test file.
//! `providers_limits` installs the binary's `#[global_allocator]`, which counts each
//! thread's allocations apart, and `adversarial_provider_canary` its global tracing
//! subscriber, which keeps only the canary test's own thread's records.

#[path = "../providers_faults/mod.rs"]
mod providers_faults;
#[path = "../providers_support/mod.rs"]
mod providers_support;
#[path = "../scripted_tools/mod.rs"]
mod scripted_tools;

mod adversarial_provider;
mod adversarial_provider_canary;
mod provider_empty_key;
mod providers_anthropic;
mod providers_content;
mod providers_gemini;
mod providers_limits;
mod providers_openai;
mod providers_responses;
mod providers_stream_props;
mod retry;
mod stream_provider;
