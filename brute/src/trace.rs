//! Spans at no cost when nobody traces.
//!
//! `tracing::Instrument` wraps a future so that its span is entered on every poll. In
//! a stack, every layer would wrap the next, and the wrappers keep the compiler from
//! flattening the nested futures into one: measured, that cost more than all the
//! layers' own work. [`traced`] only wraps when a subscriber wants the span; otherwise
//! the future is polled as it is, behind one branch.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tracing::Span;
use tracing::instrument::{Instrument, Instrumented};

pin_project_lite::pin_project! {
    /// A future inside its span, or alone when the span is disabled.
    #[project = TracedProj]
    pub(crate) enum Traced<F> {
        Plain { #[pin] future: F },
        Spanned { #[pin] future: Instrumented<F> },
    }
}

impl<F: Future> Future for Traced<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.project() {
            TracedProj::Plain { future } => future.poll(cx),
            TracedProj::Spanned { future } => future.poll(cx),
        }
    }
}

/// `future` inside `span` when the span is enabled, else `future` itself.
#[inline]
pub(crate) fn traced<F: Future>(future: F, span: Span) -> Traced<F> {
    if span.is_disabled() {
        Traced::Plain { future }
    } else {
        Traced::Spanned {
            future: future.instrument(span),
        }
    }
}
