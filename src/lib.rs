//! The workspace's own package: it owns the integration tests (`tests/`), the examples
//! (`examples/`) and the benchmarks (`benches/`) of `brute`, and is never published.
//! Depend on `brute` instead.

// The README's Rust blocks are doctests of this package, which has every feature of
// `brute` on: the stack at its top compiles as shown.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
