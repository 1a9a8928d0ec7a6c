//! The per-call timeout, paid only by calls that wait.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

/// Runs `future` for at most `limit` (no limit when `None`); `Err(limit)` when it ran
/// out. The future is borrowed pinned, so the caller builds it in place and it is never
/// moved (a per-call pipeline's future is a few hundred bytes).
///
/// The future is polled once before any timer exists: a call that finishes without
/// waiting (most calls of cheap tools) reads no clock and registers no timer, and a
/// runtime without timers works for it. A call that waits gets a Tokio timeout of
/// `limit` from that first wait, so the limit counts the time a call waits, not the
/// work it did before it first waited (which no timer can interrupt anyway).
pub(super) async fn within<F: Future>(
    limit: Option<Duration>,
    mut future: Pin<&mut F>,
) -> Result<F::Output, Duration> {
    let first = poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    match (first, limit) {
        (Poll::Ready(output), _) => Ok(output),
        (Poll::Pending, None) => Ok(future.await),
        (Poll::Pending, Some(limit)) => tokio::time::timeout(limit, future)
            .await
            .map_err(|_elapsed| limit),
    }
}

#[cfg(test)]
mod tests {
    use std::future::{pending, ready};
    use std::pin::pin;
    use std::time::Duration;

    use super::within;

    fn runtime(timers: bool) -> tokio::runtime::Runtime {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        if timers {
            builder.enable_time();
        }
        builder.build().expect("a runtime")
    }

    #[test]
    fn a_call_that_does_not_wait_touches_no_timer() {
        // Without timers, making a Tokio timer panics: this proves none is made.
        let out = runtime(false).block_on(within(Some(Duration::from_secs(1)), pin!(ready(7))));
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn a_call_that_waits_past_the_limit_is_cut_off() {
        let limit = Duration::from_millis(20);
        let out = runtime(true).block_on(within(Some(limit), pin!(pending::<()>())));
        assert_eq!(out, Err(limit));
    }

    #[test]
    fn a_call_that_waits_within_the_limit_finishes() {
        let waits = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            "done"
        };
        let out = runtime(true).block_on(within(Some(Duration::from_secs(5)), pin!(waits)));
        assert_eq!(out, Ok("done"));
    }

    #[test]
    fn without_a_limit_a_waiting_call_runs_to_the_end() {
        let waits = async {
            tokio::task::yield_now().await;
            1
        };
        assert_eq!(runtime(false).block_on(within(None, pin!(waits))), Ok(1));
    }
}
