//! Spans at no cost when nobody traces.
//!
//! `tracing::Instrument` wraps a future so that its span is entered on every poll. In
//! a stack every layer would wrap the next, and the wrappers keep the compiler from
//! building each inner future in place: measured, that cost more than all the layers'
//! own work. [`traced!`] awaits the future inside its span only when a subscriber wants
//! the span; otherwise it awaits the future itself, behind one branch.

/// Awaits `$future` inside `$span`, or without any wrapper when the span is disabled.
/// Use it in an `async` body; `traced!(future, ref span)` borrows the span.
macro_rules! traced {
    // A borrowed span, cloned only when it is enabled: a layer that awaits several
    // futures in one span pays no clone (and no drop of one) per await.
    ($future:expr, ref $span:expr) => {{
        let span: &::tracing::Span = &$span;
        if span.is_disabled() {
            $future.await
        } else {
            ::tracing::Instrument::instrument($future, span.clone()).await
        }
    }};
    ($future:expr, $span:expr) => {{
        let span: ::tracing::Span = $span;
        if span.is_disabled() {
            $future.await
        } else {
            ::tracing::Instrument::instrument($future, span).await
        }
    }};
}

pub(crate) use traced;

/// Runs `f` inside `span`; without entering it when the span is disabled.
#[inline]
pub(crate) fn in_span<R>(span: &tracing::Span, f: impl FnOnce() -> R) -> R {
    if span.is_disabled() {
        f()
    } else {
        span.in_scope(f)
    }
}
