//! The per-call timeout, paid only by calls that wait.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

/// Runs `future` for at most `limit` (no limit when `None`); `Err(limit)` when it ran
/// out.
///
/// The future is polled once before any timer exists: a call that finishes without
/// waiting (most calls of cheap tools) reads no clock and registers no timer, and a
/// runtime without timers works for it. A call that waits gets a Tokio timeout of
/// `limit` from that first wait, so the limit counts the time a call waits, not the
/// work it did before it first waited (which no timer can interrupt anyway).
pub(super) async fn within<F: Future>(
    limit: Option<Duration>,
    future: F,
) -> Result<F::Output, Duration> {
    let mut future = pin!(future);
    let first = poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    match (first, limit) {
        (Poll::Ready(output), _) => Ok(output),
        (Poll::Pending, None) => Ok(future.await),
        (Poll::Pending, Some(limit)) => tokio::time::timeout(limit, future)
            .await
            .map_err(|_elapsed| limit),
    }
}
