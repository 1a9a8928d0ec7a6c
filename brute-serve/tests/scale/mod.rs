//! The scale-out harness: topology, server process, workload, faults, checker.
//! Declared by the services binary (`tests/serve_services/main.rs`) for `scale_out`.

#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

pub mod checker;
pub mod faults;
pub mod netns;
pub mod server;
pub mod topology;
pub mod workload;
