//! brute-eval's integration tests, one module per former test binary, in one binary:
//! linking a binary per file dominated the suite's time. The test of the workspace's
//! example stays a binary of its own (`tests/example.rs`): it includes
//! `examples/eval.rs`, which the published package lacks, so the package leaves it
//! out, and this binary's modules are all in the package.

mod dataset;
mod eval;
mod providers;
mod schema;
mod scorers;
