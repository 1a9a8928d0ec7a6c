//! Administration of stored sessions, beside the lease protocol a turn uses: size,
//! retention and pruning (`retention.rs`, its items public in `brute::session`), fork
//! and rewind points (`fork.rs`).

pub(in crate::session) mod fork;
pub(crate) mod retention;
