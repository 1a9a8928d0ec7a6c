//! Administration of stored sessions, beside the lease protocol a turn uses: size,
//! retention and pruning (`retention.rs`, public as `brute::session::retention`), fork
//! and rewind points (`fork.rs`).

pub(in crate::session) mod fork;
pub mod retention;
