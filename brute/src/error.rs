//! Errors of a turn, typed by concern.

use std::time::Duration;

use crate::message::Role;
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
    /// The turn failed (`error` says why) after some of its messages were stored where
    /// its conversation is kept (`SessionLog`'s session), and they stay there: what a
    /// caller needs before it sends the prompt again. Reported when a reply or a tool
    /// result answered the prompt before the failure (those are never taken back: their
    /// effects happened), and when the removal of an unanswered prompt could not be
    /// written (the store was failing). [`Error::downcast_ref`] and
    /// [`Error::layer_name`] see through it to `error`.
    ///
    /// What a caller does: with `resend`, send the same prompt again: it is never
    /// stored twice (the next turn of the session finds the unanswered copy and stores
    /// the prompt once). Without it, do **not** send the prompt again (it would run
    /// again after its answer): load the session, see where it stands (its last
    /// message, of role `last`), and go on from there with a new turn.
    #[error("{error}; {}", stored_text(*stored, *last, *resend))]
    Stored {
        /// Why the turn failed.
        error: Box<Error>,
        /// How many of the turn's messages are stored and stay, counted from its first
        /// (the prompt); at least one.
        stored: usize,
        /// The role of the last of them (a `User` message when nothing answered the
        /// prompt).
        last: Role,
        /// Whether sending the same prompt again is safe: nothing of the turn answered
        /// it, and the next turn stores it once.
        resend: bool,
    },
}

/// What a turn that failed left stored, and what to do about it.
fn stored_text(stored: usize, last: Role, resend: bool) -> String {
    let what = match stored {
        1 => "1 message of this turn is stored and stays".to_owned(),
        n => format!("{n} messages of this turn are stored and stay"),
    };
    let last = match last {
        Role::Assistant => "an assistant",
        Role::User => "a user",
        Role::Tool => "a tool",
        Role::System => "a system",
    };
    if resend {
        format!(
            "{what} (the last {last} message: its prompt, which nothing answered and which could not be taken back); sending the same prompt again is safe: the next turn of the session stores it once"
        )
    } else {
        format!(
            "{what} (the last {last} message; something answered the prompt); do not send the prompt again: load the session and go on from its last message"
        )
    }
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
            Error::Stored { error, .. } => error.downcast_ref(),
        }
    }

    /// The layer that failed, for [`Error::Layer`] (and for the error inside an
    /// [`Error::Stored`]).
    pub fn layer_name(&self) -> Option<&'static str> {
        match self {
            Error::Layer { layer, .. } => Some(layer),
            Error::Stored { error, .. } => error.layer_name(),
            _ => None,
        }
    }

    /// A stable, machine-readable kind of this failure for a client of a server
    /// (brute-serve's JSON errors, brute-mcp's tool results): `model_server_error`,
    /// `model_unavailable`, `model_rate_limited`, `model_timeout`, `model_connection`,
    /// `model_malformed`, `model_rejected`, `model_authentication`, `model_too_large`
    /// or `context_too_long` for a model failure (found inside a layer's error too),
    /// `layer` for a layer that failed, `stopped` for a guard that stopped the turn,
    /// `turn` for anything else ([`Error::Stored`]: the kind of its error).
    /// [`Error::client_message`] is what the client is told.
    ///
    /// ```
    /// use brute::{Error, ModelError};
    ///
    /// let error = Error::Model(ModelError::Server {
    ///     status: 500,
    ///     message: "POST http://10.0.0.7:8000/v1/chat/completions".into(),
    /// });
    /// assert_eq!(error.client_kind(), "model_server_error");
    /// assert_eq!(error.client_message(), "the model provider failed (HTTP 500)");
    /// ```
    pub fn client_kind(&self) -> &'static str {
        self.for_client().0
    }

    /// What a client of a server may be shown of this failure: the kind of model
    /// failure with its HTTP status, wait or limit, the layer that failed, or the guard
    /// that stopped the turn, never the provider's own text (which may name its
    /// address, endpoint or model), a path, a host or a layer's own message; for an
    /// [`Error::Stored`], what of the turn is stored and whether a resend is safe. The
    /// whole error (its `Display`) belongs in the server's log. See
    /// [`Error::client_kind`].
    pub fn client_message(&self) -> String {
        self.for_client().1
    }

    /// The kind and message of [`Error::client_kind`] and [`Error::client_message`].
    fn for_client(&self) -> (&'static str, String) {
        if let Error::Stored {
            error,
            stored,
            last,
            resend,
        } = self
        {
            let (kind, message) = error.for_client();
            return (
                kind,
                format!("{message}; {}", stored_text(*stored, *last, *resend)),
            );
        }
        if let Some(model) = self.downcast_ref::<ModelError>() {
            return model.for_client();
        }
        match self {
            Error::Stopped(reason) => ("stopped", format!("it was stopped: {reason}")),
            Error::Layer { layer, .. } => (
                "layer",
                format!("the layer `{layer}` failed (the server's log has the details)"),
            ),
            _ => (
                "turn",
                "an error of the agent (the server's log has the details)".to_owned(),
            ),
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

    /// The kind of this failure and what a client is told of it (see
    /// [`Error::client_kind`]): its HTTP status, wait or limit, never what the provider
    /// said.
    fn for_client(&self) -> (&'static str, String) {
        let wait = |d: Option<Duration>| {
            d.map(|d| format!("; retry after {:.1}s", d.as_secs_f64()))
                .unwrap_or_default()
        };
        match self {
            ModelError::Authentication(_) => (
                "model_authentication",
                "the model provider refused the server's credentials".to_owned(),
            ),
            ModelError::RateLimited { retry_after } => (
                "model_rate_limited",
                format!("the model provider is rate limiting{}", wait(*retry_after)),
            ),
            ModelError::Server { status, .. } => (
                "model_server_error",
                format!("the model provider failed (HTTP {status})"),
            ),
            ModelError::Unavailable {
                status,
                retry_after,
                ..
            } => (
                "model_unavailable",
                format!(
                    "the model provider is unavailable (HTTP {status}){}",
                    wait(Some(*retry_after))
                ),
            ),
            ModelError::Timeout(after) => (
                "model_timeout",
                format!("the model call timed out after {after:?}"),
            ),
            ModelError::Connection(_) => (
                "model_connection",
                "the connection to the model provider failed".to_owned(),
            ),
            ModelError::Malformed(_) => (
                "model_malformed",
                "the model provider's response could not be understood".to_owned(),
            ),
            ModelError::ContextTooLong(_) => (
                "context_too_long",
                "the conversation does not fit the model's context window".to_owned(),
            ),
            ModelError::Rejected(_) => (
                "model_rejected",
                "the model provider rejected the request".to_owned(),
            ),
            ModelError::TooLarge { limit, .. } => (
                "model_too_large",
                format!("the model's response passed the size limit of {limit} bytes"),
            ),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_failure_shows_its_kind_and_nothing_the_provider_said() {
        let said = "POST http://10.0.0.7:8000/v1/chat/completions (model m) /srv/x";
        let errors = [
            ModelError::Authentication(said.into()),
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(2)),
            },
            ModelError::Server {
                status: 502,
                message: said.into(),
            },
            ModelError::Unavailable {
                status: 503,
                retry_after: Duration::from_secs(2),
                message: said.into(),
            },
            ModelError::Timeout(Duration::from_secs(3)),
            ModelError::Connection(said.into()),
            ModelError::Malformed(said.into()),
            ModelError::ContextTooLong(said.into()),
            ModelError::Rejected(said.into()),
            ModelError::TooLarge {
                limit: 10,
                message: said.into(),
            },
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for error in errors {
            let error = Error::Model(error);
            let message = error.client_message();
            for leak in ["10.0.0.7", "/srv", "/v1", "model m"] {
                assert!(!message.contains(leak), "{message}");
            }
            kinds.insert(error.client_kind());
        }
        assert_eq!(kinds.len(), 10, "one kind each: {kinds:?}");
        // Its status, wait and limit are shown.
        let status = Error::Model(ModelError::Unavailable {
            status: 503,
            retry_after: Duration::from_secs(2),
            message: said.into(),
        });
        assert_eq!(
            status.client_message(),
            "the model provider is unavailable (HTTP 503); retry after 2.0s"
        );
        // A model error inside a layer's error is found too.
        let wrapped = Error::from_layer("Fallback", ModelError::Connection(said.into()));
        assert_eq!(wrapped.client_kind(), "model_connection");
    }

    #[test]
    fn a_layer_or_other_failure_names_the_layer_not_its_message() {
        let layer = Error::layer("Budget", "/etc/brute/key");
        assert_eq!(layer.client_kind(), "layer");
        assert_eq!(
            layer.client_message(),
            "the layer `Budget` failed (the server's log has the details)"
        );
        let other = Error::other("http://10.0.0.7 said no");
        assert_eq!(other.client_kind(), "turn");
        assert!(!other.client_message().contains("10.0.0.7"));
        let stopped = Error::Stopped(ExitReason::Limit {
            by: "MaxIterations",
            limit: 3,
        });
        assert_eq!(stopped.client_kind(), "stopped");
        assert_eq!(
            stopped.client_message(),
            "it was stopped: MaxIterations reached its limit of 3"
        );
    }
}
