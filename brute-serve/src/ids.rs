//! Ids that no other process or server makes: chat completions, remote sessions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// `prefix-<time>-<process>-<count>`: unique in this process (the count) and across
/// servers and restarts (the time in nanoseconds and the process id).
pub(crate) fn unique_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}-{nanos:x}-{:x}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_ids_differ_and_keep_their_prefix() {
        let (a, b) = (super::unique_id("x"), super::unique_id("x"));
        assert_ne!(a, b);
        assert!(a.starts_with("x-"), "{a}");
    }
}
