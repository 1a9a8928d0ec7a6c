//! Mapping HTTP failures and provider error bodies to [`ModelError`]. Messages quote
//! at most [`QUOTE_LIMIT`] bytes of what a server sent, from text whose secrets were
//! replaced before (`redact.rs`), and never cut a key-shaped word in two.

#[cfg(any(feature = "http", test))]
use std::time::Duration;

use serde_json::Value;

use crate::error::ModelError;

/// How many bytes of a server's text (an error body or message, a bad chunk) an error
/// message quotes at most.
pub(crate) const QUOTE_LIMIT: usize = 500;

/// The error for an HTTP response with a failure status.
///
/// `place` names where it came from (`openai: POST http://../chat/completions`),
/// `body` is (the start of) the response body.
#[cfg(any(feature = "http", test))]
pub(crate) fn status_error(
    place: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> ModelError {
    let (kind, code, message) = error_fields(body);
    let message = quote(&message);
    let described = format!("{place}: HTTP {status}: {message}");
    match status {
        401 | 403 => ModelError::Authentication(described),
        429 => ModelError::RateLimited { retry_after },
        413 => ModelError::ContextTooLong(described),
        400 | 422 if is_context_too_long(kind.as_deref(), code.as_deref(), &message) => {
            ModelError::ContextTooLong(described)
        }
        408 | 500..=599 if retry_after.is_some() => ModelError::Unavailable {
            status,
            retry_after: retry_after.unwrap_or_default(),
            message: format!("{place}: {message}"),
        },
        408 | 500..=599 => ModelError::Server {
            status,
            message: format!("{place}: {message}"),
        },
        _ => ModelError::Rejected(described),
    }
}

/// The error for an `error` object inside a 200 response or an event stream.
pub(crate) fn body_error(place: &str, error: &Value) -> ModelError {
    let kind = error.get("type").and_then(Value::as_str);
    let code = error.get("code").and_then(code_str);
    let message = match error.get("message").and_then(Value::as_str) {
        Some(message) => quote(message),
        None => quote(&error.to_string()),
    };
    let status = error.get("code").and_then(Value::as_u64).unwrap_or(0) as u16;
    match (kind, status) {
        (Some("authentication_error" | "permission_error"), _) | (_, 401 | 403) => {
            ModelError::Authentication(format!("{place}: {message}"))
        }
        (Some("rate_limit_error"), _) | (_, 429) => ModelError::RateLimited { retry_after: None },
        (Some("overloaded_error"), _) => ModelError::Server {
            status: 529,
            message: format!("{place}: {message}"),
        },
        (Some("api_error" | "server_error"), _) => ModelError::Server {
            status: 500,
            message: format!("{place}: {message}"),
        },
        (_, 500..=599) => ModelError::Server {
            status,
            message: format!("{place}: {message}"),
        },
        _ if is_context_too_long(kind, code.as_deref(), &message) => {
            ModelError::ContextTooLong(format!("{place}: {message}"))
        }
        _ => ModelError::Rejected(format!("{place}: {message}")),
    }
}

fn code_str(code: &Value) -> Option<String> {
    match code {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `(type, code, message)` of an OpenAI (`{"error":{"message","type","code"}}`) or
/// Anthropic (`{"type":"error","error":{"type","message"}}`) error body; the quoted
/// body itself when it is neither.
#[cfg(any(feature = "http", test))]
fn error_fields(body: &str) -> (Option<String>, Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if let Some(error) = parsed.as_ref().and_then(|v| v.get("error")) {
        if let Some(message) = error.get("message").and_then(Value::as_str) {
            let kind = error.get("type").and_then(Value::as_str).map(str::to_owned);
            let code = error.get("code").and_then(code_str);
            return (kind, code, message.to_owned());
        }
        if let Some(message) = error.as_str() {
            return (None, None, message.to_owned());
        }
    }
    (None, None, quote(body))
}

fn is_context_too_long(kind: Option<&str>, code: Option<&str>, message: &str) -> bool {
    if matches!(
        code,
        Some("context_length_exceeded" | "string_above_max_length")
    ) || kind == Some("request_too_large")
    {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "prompt is too long",
        "maximum context",
        "too many tokens",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// At most [`QUOTE_LIMIT`] bytes of `body`, cut at a character boundary and never
/// inside a word that could be a key (letters, digits and `-_.+/=`): such a word
/// across the cut is left out whole, so that a secret the cut would split leaves no
/// prefix behind, even one no redactor knew of.
pub(crate) fn quote(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return "(empty body)".into();
    }
    if body.len() <= QUOTE_LIMIT {
        return body.to_owned();
    }
    let mut end = QUOTE_LIMIT;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let bytes = body.as_bytes();
    if end > 0 && is_key_byte(bytes[end - 1]) && is_key_byte(bytes[end]) {
        while end > 0 && is_key_byte(bytes[end - 1]) {
            end -= 1;
        }
    }
    format!("{}… ({} bytes)", &body[..end], body.len())
}

/// Whether `byte` may be part of an API key or token.
fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'+' | b'/' | b'=')
}

/// The wait a rate-limited response asks for: `retry-after-ms` (milliseconds, OpenAI),
/// then `retry-after` in seconds or as an HTTP date.
#[cfg(feature = "http")]
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(header("retry-after")?, std::time::SystemTime::now())
}

/// Parses a `retry-after` value: delta seconds (fractions accepted) or an HTTP date.
#[cfg(feature = "http")]
pub(crate) fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_causes() {
        let openai = r#"{"error":{"message":"Incorrect API key provided: sk-secret","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let err = status_error("openai: POST x", 401, None, openai);
        assert!(matches!(err, ModelError::Authentication(_)));

        let long = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            status_error("p", 400, None, long),
            ModelError::ContextTooLong(_)
        ));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            status_error("p", 400, None, anthropic),
            ModelError::ContextTooLong(_)
        ));
        let bad = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}"#;
        let err = status_error("anthropic: POST u", 400, None, bad);
        assert_eq!(
            err.to_string(),
            "request rejected: anthropic: POST u: HTTP 400: max_tokens: field required"
        );

        let limited = status_error("p", 429, Some(Duration::from_secs(2)), "");
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
        assert!(matches!(
            status_error("p", 529, None, "overloaded"),
            ModelError::Server { status: 529, .. }
        ));
        assert!(matches!(
            status_error("p", 503, None, "<html>"),
            ModelError::Server { status: 503, .. }
        ));
        let unavailable = status_error("p", 503, Some(Duration::from_secs(3)), "down");
        assert!(
            matches!(unavailable, ModelError::Unavailable { status: 503, .. }),
            "{unavailable:?}"
        );
        assert_eq!(unavailable.retry_after(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn error_objects_quote_a_bounded_message() {
        let huge = serde_json::json!({"message": "x".repeat(1 << 20), "type": "server_error"});
        let err = body_error("openai: POST u", &huge);
        assert!(
            matches!(err, ModelError::Server { status: 500, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().len() < 2 * QUOTE_LIMIT,
            "{} bytes",
            err.to_string().len()
        );
        let no_message = serde_json::json!({"detail": "y".repeat(1 << 20)});
        assert!(body_error("p", &no_message).to_string().len() < 2 * QUOTE_LIMIT);
        let status = status_error(
            "p",
            400,
            None,
            &format!("{{\"error\":{{\"message\":\"{}\"}}}}", "z".repeat(1 << 20)),
        );
        assert!(status.to_string().len() < 2 * QUOTE_LIMIT);
    }

    #[test]
    fn long_bodies_are_cut_at_a_char_boundary() {
        let body = "é".repeat(400);
        let quoted = quote(&body);
        assert!(
            quoted.len() < 520 && quoted.ends_with("(800 bytes)"),
            "{quoted}"
        );
    }

    #[test]
    fn a_word_across_the_cut_is_left_out_whole() {
        let key = "sk-0123456789abcdef";
        for offset in QUOTE_LIMIT - key.len() - 2..=QUOTE_LIMIT + 1 {
            let body = format!("{}{key} {}", ",".repeat(offset), "y ".repeat(400));
            let quoted = quote(&body);
            let kept = quoted.split('…').next().unwrap_or("");
            assert!(
                kept.contains(key) || !kept.contains('s'),
                "offset {offset}: {kept}"
            );
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
