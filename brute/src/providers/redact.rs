//! The one place where provider secrets are taken out of what leaves a provider.
//!
//! Every error an HTTP model returns goes through [`Redactor::error`] on its way out
//! (so the `Retry` layer's events and log lines, which carry that error, are clean), and
//! every log line a provider writes is built from redacted text. The secrets are the
//! model's API key, whether given in code (`.api_key(..)`) or read from the environment:
//! both end up in the same [`ApiKey`].

use std::borrow::Cow;

use super::ApiKey;
use crate::error::ModelError;

/// What secrets are replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Replaces the secrets of one model in text and errors.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Redactor<'k> {
    key: Option<&'k ApiKey>,
}

impl<'k> Redactor<'k> {
    /// A redactor for `key` (none: nothing to hide).
    pub(crate) fn new(key: Option<&'k ApiKey>) -> Self {
        Redactor { key }
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.key {
            Some(key) if !key.expose().is_empty() && text.contains(key.expose()) => {
                Cow::Owned(text.replace(key.expose(), REDACTED))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// `error` with the key taken out of every message it carries.
    pub(crate) fn error(&self, error: ModelError) -> ModelError {
        if self.key.is_none() {
            return error;
        }
        let clean = |message: String| match self.text(&message) {
            Cow::Borrowed(_) => message,
            Cow::Owned(clean) => clean,
        };
        match error {
            ModelError::Authentication(m) => ModelError::Authentication(clean(m)),
            ModelError::Server { status, message } => ModelError::Server {
                status,
                message: clean(message),
            },
            ModelError::Connection(m) => ModelError::Connection(clean(m)),
            ModelError::Malformed(m) => ModelError::Malformed(clean(m)),
            ModelError::ContextTooLong(m) => ModelError::ContextTooLong(clean(m)),
            ModelError::Rejected(m) => ModelError::Rejected(clean(m)),
            ModelError::TooLarge { limit, message } => ModelError::TooLarge {
                limit,
                message: clean(message),
            },
            other @ (ModelError::RateLimited { .. } | ModelError::Timeout(_)) => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_loses_the_key() {
        let key = ApiKey::new("sk-canary-123");
        let redactor = Redactor::new(Some(&key));
        let errors = [
            ModelError::Authentication("bad key sk-canary-123".into()),
            ModelError::Server {
                status: 500,
                message: "echo sk-canary-123 sk-canary-123".into(),
            },
            ModelError::Connection("sk-canary-123".into()),
            ModelError::Malformed("chunk {\"k\":\"sk-canary-123\"}".into()),
            ModelError::ContextTooLong("sk-canary-123".into()),
            ModelError::Rejected("sk-canary-123".into()),
            ModelError::TooLarge {
                limit: 1,
                message: "sk-canary-123".into(),
            },
        ];
        for error in errors {
            let clean = redactor.error(error);
            assert!(!format!("{clean} {clean:?}").contains("sk-canary-123"));
            assert!(clean.to_string().contains(REDACTED), "{clean}");
        }
        assert_eq!(redactor.text("nothing here"), "nothing here");
        assert_eq!(
            Redactor::default().text("sk-canary-123"),
            "sk-canary-123",
            "no key, nothing to hide"
        );
    }
}
