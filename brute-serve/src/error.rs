//! The errors of the server: [`ServeError`] (building and running it) and [`ApiError`]
//! (one failed request, answered as JSON with its status).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use brute::session::SessionError;
use brute::stream::{ApprovalError, TurnItem, TurnResult};
use serde::Serialize;

/// Why the server could not be built or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Neither a bearer token nor `without_auth()` was configured: the server refuses
    /// to start open by accident.
    #[error(
        "brute-serve: no authentication configured: call `bearer_token(..)`, or `without_auth()` to serve without it"
    )]
    NoAuth,
    /// No agent was registered.
    #[error("brute-serve: no agent registered: call `agent(name, agent)` at least once")]
    NoAgent,
    /// Two agents were registered under one name.
    #[error("brute-serve: agent `{0}` registered twice")]
    DuplicateAgent(String),
    /// The listener failed.
    #[error("brute-serve: serving on the listener failed: {0}")]
    Io(#[from] std::io::Error),
}

/// One failed request: its status and a JSON body in the OpenAI error shape,
/// `{"error": {"message": .., "type": .., "param": null, "code": ..}}` (`type` and
/// `code` both the [`kind`](ApiError::kind)), so OpenAI clients show the message.
/// Every error status of the server has this body, unknown routes (404), wrong
/// methods (405), bodies over the limit (413) and wrong content types (415) included.
#[derive(Debug, thiserror::Error)]
#[error("{status}: {kind}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable kind (`busy`, `not_found`, `invalid_request`, ..).
    pub kind: &'static str,
    /// What went wrong, naming the session, agent or field.
    pub message: String,
}

impl ApiError {
    /// An error of `status` and `kind`.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
        }
    }

    /// 400: the request body is not what the endpoint takes.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 404: no such session, agent or call.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: another turn holds the session (in this server or another one on the
    /// same store). Retry when that turn has ended.
    pub fn busy(session: &str) -> Self {
        ApiError::new(
            StatusCode::CONFLICT,
            "busy",
            format!(
                "session `{session}` is busy: another turn is running on it; retry when it ends"
            ),
        )
    }

    /// 504: the request ran past the configured timeout.
    pub fn timeout(what: &str, after: std::time::Duration) -> Self {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!("{what} ran past the request timeout of {after:?}"),
        )
    }

    /// The answer to a failed store operation on session `id`: 409 when a turn holds
    /// it, 400 for an id the store cannot use, 500 otherwise. The store's own message
    /// (a path on disk, a database error) goes to the log, never to the client.
    pub fn store(id: &str, error: &SessionError) -> Self {
        if is_busy(error) {
            return ApiError::busy(id);
        }
        // A retry that another attempt with its idempotency key overtook: the
        // handler reads the session again (these reach a client only if that keeps
        // happening).
        if let SessionError::KeyStored { .. } | SessionError::NotResumable { .. } = error {
            let kind = match error {
                SessionError::KeyStored { .. } => "key_stored",
                _ => "not_resumable",
            };
            return ApiError::new(
                StatusCode::CONFLICT,
                kind,
                format!(
                    "session `{}`: another request with this idempotency key changed the session meanwhile; retry",
                    crate::session_id::shown(id)
                ),
            );
        }
        if let SessionError::BadId { reason, .. } = error {
            return ApiError::invalid(format!(
                "session id `{}`: {reason}; {}",
                crate::session_id::shown(id),
                crate::session_id::RULE
            ));
        }
        tracing::error!(
            session = id,
            "brute-serve: the session store failed: {error}"
        );
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store",
            format!(
                "session `{}`: the session store failed (the server's log has the details)",
                crate::session_id::shown(id)
            ),
        )
    }

    /// The answer to a failed turn on session `id` (400 when the request's client tools
    /// clash with the agent's own). A turn that failed for any other reason than its
    /// store or its request is a 500 of a stable kind ([`brute::Error::client_kind`])
    /// whose message ([`brute::Error::client_message`]) names no address, path, host or
    /// model endpoint; the whole error goes to the server's log.
    pub fn turn(id: &str, error: &brute::Error) -> Self {
        // A failure that left some of the turn stored: the answer to its error, saying
        // what is stored and whether the prompt may be sent again.
        if let brute::Error::Stored { error: inner, .. } = error {
            let answer = ApiError::turn(id, inner);
            if answer.status != StatusCode::INTERNAL_SERVER_ERROR {
                return answer;
            }
            return ApiError::new(
                answer.status,
                answer.kind,
                format!(
                    "session `{}`: the turn failed: {}",
                    crate::session_id::shown(id),
                    error.client_message()
                ),
            );
        }
        if let Some(e) = error.downcast_ref::<brute::tools::ClientToolClash>() {
            return ApiError::invalid(format!("tools: {e}"));
        }
        if let Some(e) = error.downcast_ref::<ApprovalError>() {
            return ApiError::new(
                StatusCode::NOT_FOUND,
                "not_pending",
                format!("session `{}`: {e}", crate::session_id::shown(id)),
            );
        }
        if let Some(e) = error.downcast_ref::<SessionError>() {
            return ApiError::store(id, e);
        }
        let (kind, what) = (error.client_kind(), error.client_message());
        tracing::error!(
            session = id,
            kind,
            "brute-serve: the turn of session `{id}` failed: {error}"
        );
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            kind,
            format!(
                "session `{}`: the turn failed: {what}",
                crate::session_id::shown(id)
            ),
        )
    }

    /// The text of a stream's failed end ([`TurnResult::Failed`]) for this error:
    /// `kind: message`, which [`split_failure`] takes apart again.
    pub(crate) fn failed_text(&self) -> String {
        format!("{}: {}", self.kind, self.message)
    }

    /// The last item of a stream that failed with this error.
    pub(crate) fn end_item(&self) -> TurnItem {
        TurnItem::End {
            result: TurnResult::Failed {
                error: self.failed_text(),
            },
        }
    }
}

/// The kind and message of a stream's failed end as the server writes it
/// ([`ApiError::failed_text`]); kind `turn` and the whole text for any other.
pub(crate) fn split_failure(text: &str) -> (&str, &str) {
    match text.split_once(": ") {
        Some((kind, message))
            if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
        {
            (kind, message)
        }
        _ => ("turn", text),
    }
}

/// What a client is told of a failed model call that will be tried again
/// ([`TurnItem::Retry`]'s `error`, the model error as it displays): its cause
/// (`server error 500`, `rate limited (retry after 1.0s)`, ..) without the provider's
/// own text, which may name its endpoint.
pub(crate) fn retry_shown(error: &str) -> String {
    const CAUSES: [&str; 10] = [
        "authentication failed",
        "rate limited",
        "server error",
        "server unavailable",
        "timed out after",
        "connection failed",
        "malformed response",
        "context too long",
        "request rejected",
        "response too large",
    ];
    let cause = error.split_once(": ").map_or(error, |(cause, _)| cause);
    if CAUSES.iter().any(|c| cause.starts_with(c)) && !cause.contains("://") {
        cause.to_owned()
    } else {
        "the model call failed".to_owned()
    }
}

/// `item` as a client may see it: a retry's error reduced by [`retry_shown`].
pub(crate) fn shown_item(item: TurnItem) -> TurnItem {
    match item {
        TurnItem::Retry {
            attempt,
            delay_ms,
            error,
        } => TurnItem::Retry {
            attempt,
            delay_ms,
            error: retry_shown(&error),
        },
        other => other,
    }
}

/// Whether `error` says that another turn holds the session.
pub(crate) fn is_busy(error: &SessionError) -> bool {
    matches!(
        error,
        SessionError::Locked { .. } | SessionError::Leased { .. }
    )
}

/// The body of every error status: `{"error": {..}}` (OpenAI's error shape).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    /// What went wrong.
    error: ErrorDetail<'a>,
}

/// The `error` of an [`ErrorBody`].
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorDetail<'a> {
    /// What went wrong, naming the session, agent, field or route.
    message: &'a str,
    /// A stable, machine-readable kind (`busy`, `not_found`, `invalid_request`, ..).
    #[serde(rename = "type")]
    kind: &'a str,
    /// Always `null` (OpenAI's field naming the parameter at fault).
    #[schema(value_type = Option<String>)]
    param: Option<&'a str>,
    /// The same as `type`.
    code: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                message: &self.message,
                kind: self.kind,
                param: None,
                code: self.kind,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

/// Parses a JSON request body, naming the line, column and field of a mistake.
/// Anything but a JSON object (an array, which serde would read as a struct's fields
/// in order, a string, nothing) is a 400.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::invalid("request body: expected a JSON object"));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("request body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brute::ModelError;

    #[test]
    fn a_store_failure_shows_neither_its_path_nor_its_message() {
        let error = SessionError::Io {
            path: "/srv/brute/sessions/s.jsonl".into(),
            action: "look at the session path",
            source: std::io::Error::other("File name too long"),
        };
        let answer = ApiError::store("s", &error);
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!answer.message.contains("/srv/brute"), "{}", answer.message);
        assert!(!answer.message.contains("too long"), "{}", answer.message);
    }

    #[test]
    fn a_model_failure_shows_its_kind_and_nothing_the_provider_said() {
        let said = "POST http://10.0.0.7:8000/v1/chat/completions /srv/x";
        let errors = [
            ModelError::Authentication(said.into()),
            ModelError::Server {
                status: 502,
                message: said.into(),
            },
            ModelError::Unavailable {
                status: 503,
                retry_after: std::time::Duration::from_secs(2),
                message: said.into(),
            },
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
            let shown = error.to_string();
            let answer = ApiError::turn("s", &brute::Error::Model(error));
            assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
            assert!(!answer.message.contains("10.0.0.7"), "{}", answer.message);
            assert!(!answer.message.contains("/srv"), "{}", answer.message);
            assert!(answer.kind.starts_with("model_") || answer.kind == "context_too_long");
            kinds.insert(answer.kind);
            // The retry item's cause keeps the kind of failure, not what was said.
            let retry = retry_shown(&shown);
            assert!(!retry.contains("10.0.0.7"), "{retry}");
            assert_ne!(retry, "the model call failed", "{shown}");
        }
        assert_eq!(kinds.len(), 8, "one kind each: {kinds:?}");
        // A model error inside a layer's error is found too.
        let wrapped = brute::Error::from_layer(
            "Fallback",
            ModelError::Connection("to http://10.0.0.7".into()),
        );
        assert_eq!(ApiError::turn("s", &wrapped).kind, "model_connection");
    }

    #[test]
    fn a_layer_or_other_failure_names_the_layer_not_its_message() {
        let answer = ApiError::turn("s", &brute::Error::layer("Budget", "/etc/brute/key"));
        assert_eq!(answer.kind, "layer");
        assert!(answer.message.contains("`Budget`"), "{}", answer.message);
        assert!(!answer.message.contains("/etc"), "{}", answer.message);
        let answer = ApiError::turn("s", &brute::Error::other("http://10.0.0.7 said no"));
        assert_eq!(answer.kind, "turn");
        assert!(!answer.message.contains("10.0.0.7"), "{}", answer.message);
    }

    #[test]
    fn a_failure_that_left_the_prompt_stored_says_so_and_keeps_its_kind() {
        let store = SessionError::Io {
            path: "/srv/brute/sessions/s.jsonl".into(),
            action: "append to the session",
            source: std::io::Error::other("File too large"),
        };
        let error = brute::Error::Stored {
            error: Box::new(store.into()),
            stored: 1,
            last: brute::Role::User,
            resend: true,
        };
        let answer = ApiError::turn("s", &error);
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(answer.kind, "store");
        assert!(!answer.message.contains("/srv"), "{}", answer.message);
        assert!(
            answer.message.contains("1 message of this turn is stored")
                && answer
                    .message
                    .contains("sending the same prompt again is safe"),
            "{}",
            answer.message
        );
        let model = brute::Error::Stored {
            error: Box::new(brute::Error::Model(ModelError::Timeout(
                std::time::Duration::from_secs(1),
            ))),
            stored: 3,
            last: brute::Role::Tool,
            resend: false,
        };
        let answer = ApiError::turn("s", &model);
        assert_eq!(answer.kind, "model_timeout");
        assert!(
            answer.message.contains("do not send the prompt again"),
            "{}",
            answer.message
        );
    }

    #[test]
    fn a_failed_end_gives_back_its_kind_and_message() {
        let error = ApiError::turn(
            "s",
            &brute::Error::Model(ModelError::Timeout(std::time::Duration::from_secs(3))),
        );
        let text = error.failed_text();
        assert_eq!(
            split_failure(&text),
            ("model_timeout", error.message.as_str())
        );
        assert_eq!(split_failure("Some: thing"), ("turn", "Some: thing"));
        assert_eq!(
            retry_shown("anything else: http://x"),
            "the model call failed"
        );
        assert_eq!(
            retry_shown("rate limited (retry after 1.0s)"),
            "rate limited (retry after 1.0s)"
        );
    }

    #[test]
    fn an_id_the_store_refuses_is_a_400_with_the_rule() {
        let error = SessionError::BadId {
            id: "x".into(),
            reason: "it is empty",
        };
        let answer = ApiError::store("x", &error);
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert!(
            answer.message.contains("1 to 128 bytes"),
            "{}",
            answer.message
        );
    }
}
