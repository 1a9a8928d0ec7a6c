//! Bearer-token authentication of the API routes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// How requests authenticate.
#[derive(Debug)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <one of these>`.
    Bearer(Vec<String>),
    /// Nothing is checked (configured explicitly with `without_auth`).
    Disabled,
}

impl Auth {
    fn allows(&self, header: Option<&[u8]>) -> bool {
        let tokens = match self {
            Auth::Disabled => return true,
            Auth::Bearer(tokens) => tokens,
        };
        let Some(given) = header.and_then(bearer) else {
            return false;
        };
        // Compares every token in full, so the time taken says nothing of a prefix.
        tokens
            .iter()
            .fold(false, |ok, token| ok | same(token.as_bytes(), given))
    }
}

/// The credentials of an `Authorization: Bearer <token>` header: the scheme in any
/// case (RFC 9110, 11.1), then one or more spaces.
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

/// Constant-time equality for equal lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Answers 401 to a request without a valid token.
pub(crate) async fn check(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    if auth.allows(header) {
        return next.run(request).await;
    }
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "missing or wrong `Authorization: Bearer <token>` header",
    )
    .into_response();
    response.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_must_match_exactly() {
        let auth = Auth::Bearer(vec!["s3cret".into(), "other".into()]);
        assert!(auth.allows(Some(b"Bearer s3cret")));
        assert!(auth.allows(Some(b"Bearer other")));
        assert!(!auth.allows(Some(b"Bearer s3cre")));
        assert!(!auth.allows(Some(b"Bearer s3cret2")));
        assert!(auth.allows(Some(b"bearer s3cret")));
        assert!(auth.allows(Some(b"BEARER s3cret")));
        assert!(auth.allows(Some(b"Bearer  s3cret")));
        assert!(!auth.allows(Some(b"Bearers3cret")));
        assert!(!auth.allows(Some(b"Bearer ")));
        assert!(!auth.allows(Some(b"Basic s3cret")));
        assert!(!auth.allows(Some(b"s3cret")));
        assert!(!auth.allows(None));
        assert!(Auth::Disabled.allows(None));
    }
}
