//! Errors that axum answers before a handler runs (no route, a wrong method, a body
//! over the limit, a path or query it cannot read), turned into the JSON error shape
//! of [`ApiError`], and the content-type check of JSON request bodies.

use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, HeaderMap};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Gives an error response that is not JSON (axum's own: 405 with no body, 413 in
/// plain text, ..) the JSON body of [`ApiError`], and answers 415 to a request whose
/// body says it is something other than JSON.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    if method == Method::POST && !json_or_none(request.headers()) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("`{method} {path}`: the body must be JSON (`content-type: application/json`)"),
        )
        .into_response();
    }
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(response.headers()) {
        return response;
    }
    let mut error = match status {
        StatusCode::NOT_FOUND => ApiError::not_found(format!("no route `{method} {path}`")),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            status,
            "method_not_allowed",
            format!("`{path}` does not take `{method}`"),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            "body_too_large",
            "the request body is larger than the server's limit",
        ),
        // A path or query axum could not read: its text names the part, never a
        // handler's type (every path and query field is a string).
        StatusCode::BAD_REQUEST => ApiError::invalid(format!("`{method} {path}`: bad request")),
        _ => ApiError::new(
            status,
            "error",
            status.canonical_reason().unwrap_or("error").to_owned(),
        ),
    }
    .into_response();
    // Headers that say how to retry or authenticate stay (`Allow` of a 405).
    for (name, value) in response.headers() {
        if name != CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            error.headers_mut().insert(name.clone(), value.clone());
        }
    }
    error
}

/// Whether a request's body is JSON or says nothing of its type.
fn json_or_none(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_none() || is_json(headers)
}

/// Whether `content-type` is `application/json` or a `+json` type, with any parameters.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence
            .rsplit_once('+')
            .is_some_and(|(_, suffix)| suffix.eq_ignore_ascii_case("json"))
}
