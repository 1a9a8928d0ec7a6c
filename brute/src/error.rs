//! Errors of a turn, typed by concern.

use std::time::Duration;

use crate::stop::ExitReason;

/// A boxed error for composition: what a middleware of yours returns through
/// [`Error::Other`] when it has no variant of its own.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a turn failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model (the `run` terminal) failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A layer failed; `layer` names it and `source` is its own error (a
    /// `SessionError` of `SessionLog`, a message). Reach the typed error with
    /// [`Error::downcast_ref`].
    #[error("{layer}: {source}")]
    Layer {
        /// The middleware that failed, as written in the stack.
        layer: &'static str,
        /// What went wrong, typed by the layer.
        source: BoxError,
    },
    /// A guard ended the turn and was configured to make that an error
    /// (for example `MaxIterations` in error mode).
    #[error("the turn was stopped: {0}")]
    Stopped(ExitReason),
    /// Any other failure, for middleware of your own.
    #[error(transparent)]
    Other(BoxError),
}

impl Error {
    /// An error of the layer `layer` with a message.
    pub fn layer(layer: &'static str, message: impl Into<String>) -> Self {
        Error::Layer {
            layer,
            source: message.into().into(),
        }
    }

    /// An error of the layer `layer` carrying the layer's own typed error, which
    /// [`Error::downcast_ref`] gives back.
    ///
    /// ```
    /// use brute::Error;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("quota of {0} exceeded")]
    /// struct Quota(u32);
    ///
    /// let error = Error::from_layer("Budget", Quota(10));
    /// assert_eq!(error.to_string(), "Budget: quota of 10 exceeded");
    /// assert!(matches!(error.downcast_ref::<Quota>(), Some(Quota(10))));
    /// ```
    pub fn from_layer(layer: &'static str, error: impl Into<BoxError>) -> Self {
        Error::Layer {
            layer,
            source: error.into(),
        }
    }

    /// Wraps any error.
    pub fn other(error: impl Into<BoxError>) -> Self {
        Error::Other(error.into())
    }

    /// The typed error inside a [`Error::Layer`] or [`Error::Other`], or the
    /// [`ModelError`] of [`Error::Model`], if it is a `T`.
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        match self {
            Error::Layer { source, .. } | Error::Other(source) => source.downcast_ref(),
            Error::Model(error) => (error as &(dyn std::error::Error + 'static)).downcast_ref(),
            Error::Stopped(_) => None,
        }
    }

    /// The layer that failed, for [`Error::Layer`].
    pub fn layer_name(&self) -> Option<&'static str> {
        match self {
            Error::Layer { layer, .. } => Some(layer),
            _ => None,
        }
    }
}

/// Why one model call failed, typed by cause so that `Retry` can tell what is worth
/// another attempt.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider refused the credentials (HTTP 401/403).
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// Too many requests (HTTP 429); `retry_after` is the server's hint, if any.
    #[error("rate limited{}", retry_after.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// How long the server asked to wait.
        retry_after: Option<Duration>,
    },
    /// The server failed (HTTP 5xx).
    #[error("server error {status}: {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The body or reason the server gave.
        message: String,
    },
    /// The server is unavailable for now and said how long to wait (HTTP 503, or
    /// another 5xx, with a `Retry-After` header); without that header a 5xx is
    /// [`ModelError::Server`].
    #[error("server unavailable {status} (retry after {:.1}s): {message}", retry_after.as_secs_f64())]
    Unavailable {
        /// The HTTP status.
        status: u16,
        /// How long the server asked to wait.
        retry_after: Duration,
        /// The body or reason the server gave.
        message: String,
    },
    /// The call did not finish in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The connection failed or was dropped.
    #[error("connection failed: {0}")]
    Connection(String),
    /// The response could not be understood.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The conversation does not fit the model's context window.
    #[error("context too long: {0}")]
    ContextTooLong(String),
    /// The provider rejected the request for another reason.
    #[error("request rejected: {0}")]
    Rejected(String),
    /// The response passed a size limit (one stream event, a whole non-streamed
    /// body, or a tool call's id longer than 256 bytes); it was refused there, without
    /// reading or storing the rest.
    #[error("response too large: {message} (limit {limit} bytes)")]
    TooLarge {
        /// The limit that was passed, in bytes.
        limit: usize,
        /// Where, and what was too large.
        message: String,
    },
}

impl ModelError {
    /// Whether another attempt may succeed: rate limits, server errors, timeouts and
    /// dropped connections.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Server { .. }
                | ModelError::Unavailable { .. }
                | ModelError::Timeout(_)
                | ModelError::Connection(_)
        )
    }

    /// The wait the server asked for, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } => *retry_after,
            ModelError::Unavailable { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }
}
