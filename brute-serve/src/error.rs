//! The errors of the server: [`ServeError`] (building and running it) and [`ApiError`]
//! (one failed request, answered as JSON with its status).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use brute::session::SessionError;
use brute::stream::ApprovalError;
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
    /// clash with the agent's own).
    pub fn turn(id: &str, error: &brute::Error) -> Self {
        if let Some(e) = error.downcast_ref::<brute::tools::ClientToolClash>() {
            return ApiError::invalid(format!("tools: {e}"));
        }
        if let Some(e) = error.downcast_ref::<ApprovalError>() {
            return ApiError::new(
                StatusCode::NOT_FOUND,
                "not_pending",
                format!("session `{id}`: {e}"),
            );
        }
        match error.downcast_ref::<SessionError>() {
            Some(e) => ApiError::store(id, e),
            None => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "turn",
                format!("session `{id}`: the turn failed: {error}"),
            ),
        }
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
