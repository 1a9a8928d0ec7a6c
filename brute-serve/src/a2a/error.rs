//! The errors of the A2A endpoint, each with the JSON-RPC code that A2A v1.0 gives it.

use crate::error::ApiError;

/// Why an A2A request failed; the message is the client's to read (it names the task,
/// field or method, never a server path).
#[derive(Debug, thiserror::Error)]
pub(crate) enum A2aError {
    /// The body is not JSON (-32700).
    #[error("the request is not JSON: {0}")]
    Parse(String),
    /// The body is JSON but no JSON-RPC 2.0 request (-32600).
    #[error("not a JSON-RPC 2.0 request: {0}")]
    InvalidRequest(String),
    /// No such method (-32601).
    #[error("{0}")]
    MethodNotFound(String),
    /// The params do not fit the method (-32602).
    #[error("{0}")]
    InvalidParams(String),
    /// The server failed (-32603).
    #[error("{0}")]
    Internal(String),
    /// A turn or its store failed (-32603, REST 500), with the stable kind of the
    /// server's JSON errors (`model_server_error`, `store`, ..) in the error's `data`
    /// (REST: the `ErrorInfo`'s `metadata`).
    #[error("{1}")]
    Failed(&'static str, String),
    /// No such task (-32001).
    #[error("task `{0}` not found")]
    TaskNotFound(String),
    /// The task cannot be canceled in its state (-32002).
    #[error("{0}")]
    NotCancelable(String),
    /// Push notifications are not offered (-32003).
    #[error("this server sends no push notifications")]
    PushNotSupported,
    /// The method or request is not what this server does (-32004).
    #[error("{0}")]
    Unsupported(String),
    /// A part of a kind the agent does not take (-32005).
    #[error("{0}")]
    ContentType(String),
    /// The `A2A-Version` the client asked for (-32009).
    #[error("A2A version `{0}` is not supported: this server speaks A2A 1.0")]
    Version(String),
}

impl A2aError {
    /// The JSON-RPC error code.
    pub(crate) fn code(&self) -> i64 {
        match self {
            A2aError::Parse(_) => -32700,
            A2aError::InvalidRequest(_) => -32600,
            A2aError::MethodNotFound(_) => -32601,
            A2aError::InvalidParams(_) => -32602,
            A2aError::Internal(_) | A2aError::Failed(..) => -32603,
            A2aError::TaskNotFound(_) => -32001,
            A2aError::NotCancelable(_) => -32002,
            A2aError::PushNotSupported => -32003,
            A2aError::Unsupported(_) => -32004,
            A2aError::ContentType(_) => -32005,
            A2aError::Version(_) => -32009,
        }
    }

    /// The HTTP status, `google.rpc` status and A2A reason of the REST binding.
    pub(crate) fn rest(&self) -> (u16, &'static str, &'static str) {
        match self {
            A2aError::Parse(_) | A2aError::InvalidRequest(_) => {
                (400, "INVALID_ARGUMENT", "INVALID_REQUEST")
            }
            A2aError::MethodNotFound(_) => (404, "NOT_FOUND", "METHOD_NOT_FOUND"),
            A2aError::InvalidParams(_) => (400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
            A2aError::Internal(_) | A2aError::Failed(..) => (500, "INTERNAL", "INTERNAL_ERROR"),
            A2aError::TaskNotFound(_) => (404, "NOT_FOUND", "TASK_NOT_FOUND"),
            // A2A v1.0, 5.4: a task that cannot be canceled in its state is a conflict.
            A2aError::NotCancelable(_) => (409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
            A2aError::PushNotSupported => (
                400,
                "FAILED_PRECONDITION",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            A2aError::Unsupported(_) => (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
            A2aError::ContentType(_) => (400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"),
            A2aError::Version(_) => (400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
        }
    }

    /// The REST binding's error body: a `google.rpc.Status` with an `ErrorInfo` that
    /// names the A2A reason.
    pub(crate) fn rest_json(&self) -> serde_json::Value {
        let (code, status, reason) = self.rest();
        let mut info = serde_json::json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "a2a-protocol.org",
        });
        if let A2aError::Failed(kind, _) = self {
            info["metadata"] = serde_json::json!({ "kind": kind });
        }
        serde_json::json!({"error": {
            "code": code,
            "status": status,
            "message": self.to_string(),
            "details": [info],
        }})
    }

    /// The JSON-RPC error object.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut error = serde_json::json!({ "code": self.code(), "message": self.to_string() });
        if let A2aError::Failed(kind, _) = self {
            error["data"] = serde_json::json!({ "kind": kind });
        }
        error
    }
}

impl From<ApiError> for A2aError {
    /// The A2A face of the server's own errors: a busy session is an operation this
    /// task cannot take now, a missing one a task not found; the message stays.
    fn from(error: ApiError) -> A2aError {
        match error.kind {
            "busy" => A2aError::Unsupported(error.message),
            "not_found" | "not_pending" => A2aError::InvalidParams(error.message),
            "invalid_request" => A2aError::InvalidParams(error.message),
            _ => A2aError::Failed(error.kind, error.message),
        }
    }
}
