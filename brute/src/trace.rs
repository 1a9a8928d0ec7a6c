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

/// A count as an OpenTelemetry integer (`i64`): `tracing-opentelemetry` exports a
/// `u64` field as a string. Saturates at `i64::MAX`.
#[inline]
pub(crate) fn otel_int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// Records `gen_ai.usage.cost`, in US dollars as an OpenTelemetry double (the
/// attribute Langfuse reads as an observation's total cost), on a `chat` span (a
/// call's cost, from `model::after_call`) or an `invoke_agent` span (the turn's, from
/// `Agent::run`), which declare the field.
pub(crate) fn record_cost(span: &tracing::Span, picodollars: u64) {
    if !span.is_disabled() {
        // Exact up to 2^53 picodollars (about $9,000): a float is what backends sum.
        span.record("gen_ai.usage.cost", picodollars as f64 / 1e12);
    }
}

/// Marks `span` as failed with `error`, in the OpenTelemetry fields an exporter reads
/// (`otel.status_code`, `otel.status_description`, `error.type`), which the span must
/// declare (as `Empty`). Nothing is formatted when the span is disabled.
pub(crate) fn record_error(span: &tracing::Span, error: &crate::Error) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type(error));
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", error.to_string());
}

/// Marks a tool call's span as failed: its result is an error. The result's text stays
/// out: it may quote the tool's input, which is content.
#[cfg(feature = "tools")]
pub(crate) fn record_tool_error(span: &tracing::Span) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "ERROR");
}

/// The class of a turn's error for `error.type`: low-cardinality, as the OpenTelemetry
/// conventions ask (`_OTHER` for an error brute does not classify).
fn error_type(error: &crate::Error) -> &'static str {
    use crate::{Error, ModelError};
    match error {
        Error::Model(model) => match model {
            ModelError::Authentication(_) => "authentication",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Server { .. } => "server_error",
            ModelError::Unavailable { .. } => "unavailable",
            ModelError::Timeout(_) => "timeout",
            ModelError::Connection(_) => "connection",
            ModelError::Malformed(_) => "malformed_response",
            ModelError::ContextTooLong(_) => "context_too_long",
            ModelError::Rejected(_) => "rejected",
            ModelError::TooLarge { .. } => "response_too_large",
            // A variant added later is `_OTHER` until it is named here.
            #[allow(unreachable_patterns)]
            _ => "_OTHER",
        },
        Error::Layer { .. } => "layer",
        Error::Stopped(_) => "stopped",
        Error::Stored { error, .. } => error_type(error),
        #[allow(unreachable_patterns)]
        _ => "_OTHER",
    }
}
