//! The tools room: the built-in tools, the tool pipeline, approval, retries, skills, call
//! limits, guardrails and handoffs.

#[path = "../providers_support/mod.rs"]
mod providers_support;
#[path = "../scripted_tools/mod.rs"]
mod scripted_tools;

mod adversarial_tools;
mod approval_by_type;
mod call_limit;
mod guardrails;
mod handoff;
mod skills;
mod tool_pipeline;
mod tool_retry;
mod tools;
mod tools_builtin;
mod tools_config;
