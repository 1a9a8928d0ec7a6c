//! The workspace's own package: it owns the integration tests (`tests/`), the examples
//! (`examples/`) and the benchmarks (`benches/`) of `brute`, and is never published.
//! Depend on `brute` instead.
