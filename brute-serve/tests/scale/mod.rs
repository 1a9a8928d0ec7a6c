//! The scale-out harness: topology, server process, workload, faults, checker.

pub mod checker;
pub mod faults;
pub mod netns;
pub mod server;
pub mod topology;
pub mod workload;

#[path = "../../../tests/postgres_support/mod.rs"]
pub mod postgres_support;
