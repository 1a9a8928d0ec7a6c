//! The one place where provider secrets are taken out of what leaves a provider.
//!
//! The secrets of an HTTP model are its API key (given in code with `.api_key(..)` or
//! read from the environment: both end up in the same [`ApiKey`]) and the value of
//! every header it sends that carries a credential (`authorization`, `api-key`, a name
//! holding `key`, `token`, `secret`, ...; see [`is_secret_header`]), or that was given
//! with `.secret_header(..)`.
//!
//! They are replaced *before* any text is cut, wherever a provider's bytes become text:
//!
//! - an error response's body is redacted before it is parsed and quoted;
//! - a response (a body, or a stream as it arrives, through a [`StreamRedactor`] that
//!   holds back a possible start of a secret until the next chunk says) is redacted
//!   before it is decoded, unless the model was told `.redact_output(false)`;
//! - every error the model returns passes [`Redactor::error`] on its way out (so the
//!   `Retry` layer's events and log lines, which carry that error, are clean).
//!
//! Quoting itself ([`quote`](super::errors::quote)) never cuts a key-shaped word in
//! two, so that even a secret this module was not told of leaves no prefix at a cut.

// Without the HTTP models only the stream deltas' redaction is used.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::borrow::Cow;
use std::sync::Arc;

use super::ApiKey;
use crate::error::ModelError;

/// What secrets are replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Whether a header named `name` carries a credential: its value is then a secret.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "api-key"
    ) || [
        "key",
        "token",
        "secret",
        "auth",
        "password",
        "signature",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// Replaces the secrets of one model in text, bytes and errors.
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactor {
    /// The secrets, none empty, longest first (so that a secret holding another is
    /// replaced whole).
    secrets: Vec<Arc<str>>,
}

impl Redactor {
    /// A redactor for `key` (none: nothing to hide).
    pub(crate) fn new(key: Option<&ApiKey>) -> Self {
        Redactor::default().with_key(key)
    }

    /// Also hides `key`.
    pub(crate) fn with_key(self, key: Option<&ApiKey>) -> Self {
        match key {
            Some(key) => self.with(key.expose()),
            None => self,
        }
    }

    /// Also hides `secret` and, for a header value such as `Bearer <token>`, each of
    /// its words of 8 bytes or more (a server may echo the token without its scheme);
    /// each in every form a JSON string gives it ([`json_forms`]), so that a secret is
    /// replaced in a body before the body is parsed, whatever its characters.
    pub(crate) fn with(mut self, secret: &str) -> Self {
        let secret = secret.trim();
        let words = secret.split_whitespace().filter(|w| w.len() >= 8);
        for part in std::iter::once(secret).chain(words) {
            for form in json_forms(part) {
                if !form.is_empty() && !self.secrets.iter().any(|s| **s == *form) {
                    self.secrets.push(Arc::from(form));
                }
            }
        }
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self
    }

    /// The secrets.
    pub(crate) fn secrets(&self) -> &[Arc<str>] {
        &self.secrets
    }

    /// `message` (a model's reply) with the secrets taken out of its text, reasoning
    /// and tool calls (their names, ids and every string of their arguments).
    pub(crate) fn message(&self, message: &mut crate::message::Message) {
        if self.is_empty() {
            return;
        }
        let fix = |text: &mut String| {
            if let Cow::Owned(clean) = self.text(text) {
                *text = clean;
            }
        };
        fix(&mut message.content);
        if let Some(reasoning) = message.reasoning_mut() {
            fix(reasoning);
        }
        for call in &mut message.tool_calls {
            fix(&mut call.id);
            fix(&mut call.name);
            self.value(&mut call.arguments);
        }
    }

    /// Takes the secrets out of every string (keys included) of `value`.
    fn value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) => {
                if let Cow::Owned(clean) = self.text(text) {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let dirty = map.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
                if dirty {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.text(&k).into_owned(), v))
                        .collect();
                }
                map.values_mut().for_each(|v| self.value(v));
            }
            _ => {}
        }
    }

    /// Whether there is anything to hide.
    pub(crate) fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every occurrence of a secret replaced by `[redacted]`.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Secrets are whole strings and the replacement is ASCII: still UTF-8.
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// `bytes` with every occurrence of a secret replaced by `[redacted]`.
    pub(crate) fn bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        if self.find(bytes, 0).is_none() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let end = self.replace_into(bytes, &mut out);
        out.extend_from_slice(&bytes[end..]);
        Cow::Owned(out)
    }

    /// `text`, the start of a longer text cut by a read limit: redacted, and with a
    /// trailing start of a secret (4 bytes or more) that the cut left replaced too.
    pub(crate) fn truncated<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let clean = self.text(text);
        let tail = self
            .secrets
            .iter()
            .filter_map(|s| held_prefix(clean.as_bytes(), s.as_bytes()))
            .min();
        match tail {
            Some(at) if clean.len() - at >= 4 && clean.is_char_boundary(at) => {
                Cow::Owned(format!("{}{REDACTED}", &clean[..at]))
            }
            _ => clean,
        }
    }

    /// The earliest occurrence of a secret in `bytes` at or after `from`: its start
    /// and length.
    fn find(&self, bytes: &[u8], from: usize) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for secret in &self.secrets {
            let secret = secret.as_bytes();
            let limit = best.map_or(bytes.len(), |(start, _)| start + secret.len());
            let window = &bytes[from..limit.min(bytes.len())];
            if let Some(at) = find_bytes(window, secret) {
                let start = from + at;
                if best.is_none_or(|(b, _)| start < b) {
                    best = Some((start, secret.len()));
                }
            }
        }
        best
    }

    /// Copies `bytes` into `out` with every whole secret replaced, up to the end of the
    /// last replacement; returns where the copy stopped.
    fn replace_into(&self, bytes: &[u8], out: &mut Vec<u8>) -> usize {
        let mut at = 0;
        while let Some((start, len)) = self.find(bytes, at) {
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = start + len;
        }
        at
    }

    /// A redactor of a byte stream over these secrets.
    pub(crate) fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            redactor: self.clone(),
            held: Vec::new(),
        }
    }

    /// `error` with the secrets taken out of every message it carries.
    pub(crate) fn error(&self, error: ModelError) -> ModelError {
        self.error_with(error, |message| match self.text(&message) {
            Cow::Borrowed(_) => message,
            Cow::Owned(clean) => clean,
        })
    }

    /// [`Redactor::error`] for an error that quoted text no one redacted before the
    /// quote was cut (a reply decoded as it came, under `redact_output(false)`): a start
    /// of a secret (4 bytes or more) left at a quote's cut (`… (N bytes)`) is replaced
    /// too.
    pub(crate) fn quoted_error(&self, error: ModelError) -> ModelError {
        self.error_with(error, |message| {
            let message = self.text(&message).into_owned();
            let mut out = String::with_capacity(message.len());
            let mut rest = message.as_str();
            while let Some(at) = rest.find(CUT) {
                out.push_str(self.truncated(&rest[..at]).as_ref());
                out.push_str(CUT);
                rest = &rest[at + CUT.len()..];
            }
            out.push_str(rest);
            out
        })
    }

    /// `error` with `clean` applied to every message it carries.
    fn error_with(&self, error: ModelError, clean: impl Fn(String) -> String) -> ModelError {
        if self.is_empty() {
            return error;
        }
        match error {
            ModelError::Authentication(m) => ModelError::Authentication(clean(m)),
            ModelError::Server { status, message } => ModelError::Server {
                status,
                message: clean(message),
            },
            ModelError::Unavailable {
                status,
                retry_after,
                message,
            } => ModelError::Unavailable {
                status,
                retry_after,
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

/// What follows the text a quote kept when it cut a longer one
/// ([`quote`](super::errors::quote)).
const CUT: &str = "… (";

/// `secret` and the other forms a JSON string may give it in a body: `"`, `\` and
/// control characters escaped (every encoder), and on top of that `/` as `\/` (PHP),
/// non-ASCII as `\uXXXX` (Python, PHP) and `<`, `>`, `&` as `\u003c`.. (Go), each
/// alone or together.
fn json_forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    for options in 0..8u8 {
        let (slash, ascii, html) = (options & 1 != 0, options & 2 != 0, options & 4 != 0);
        let mut form = String::with_capacity(secret.len() + 8);
        for c in secret.chars() {
            match c {
                '"' => form.push_str("\\\""),
                '\\' => form.push_str("\\\\"),
                '/' if slash => form.push_str("\\/"),
                '\n' => form.push_str("\\n"),
                '\r' => form.push_str("\\r"),
                '\t' => form.push_str("\\t"),
                c if (c as u32) < 0x20
                    || (html && matches!(c, '<' | '>' | '&'))
                    || (ascii && !c.is_ascii()) =>
                {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        form.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => form.push(c),
            }
        }
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// Where a proper prefix of `secret` starts at the very end of `bytes`, if one does.
fn held_prefix(bytes: &[u8], secret: &[u8]) -> Option<usize> {
    let longest = secret.len().saturating_sub(1).min(bytes.len());
    (1..=longest)
        .rev()
        .find(|&n| bytes[bytes.len() - n..] == secret[..n])
        .map(|n| bytes.len() - n)
}

/// The first occurrence of `needle` (not empty) in `haystack`.
fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while from + needle.len() <= haystack.len() {
        let at = from
            + haystack[from..=haystack.len() - needle.len()]
                .iter()
                .position(|&b| b == first)?;
        if haystack[at + 1..at + needle.len()] == *rest {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Redacts a byte stream cut anywhere: a secret split across two chunks is replaced
/// whole, because the end of a chunk that could start a secret is held back until the
/// next chunk (or the end) says whether it does.
#[derive(Debug)]
pub(crate) struct StreamRedactor {
    redactor: Redactor,
    held: Vec<u8>,
}

impl StreamRedactor {
    /// The redacted bytes of `chunk` that can be let through now.
    pub(crate) fn feed<'a>(&mut self, chunk: &'a [u8], out: &'a mut Vec<u8>) -> &'a [u8] {
        if self.redactor.is_empty() {
            return chunk;
        }
        out.clear();
        let mut joined;
        let bytes: &[u8] = if self.held.is_empty() {
            chunk
        } else {
            joined = std::mem::take(&mut self.held);
            joined.extend_from_slice(chunk);
            &joined
        };
        let done = self.redactor.replace_into(bytes, out);
        let rest = &bytes[done..];
        let hold = self
            .redactor
            .secrets
            .iter()
            .filter_map(|s| held_prefix(rest, s.as_bytes()))
            .min()
            .unwrap_or(rest.len());
        out.extend_from_slice(&rest[..hold]);
        self.held.clear();
        self.held.extend_from_slice(&rest[hold..]);
        out
    }

    /// What was held back, at the end of the stream: no secret, since none followed.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
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
            ModelError::Unavailable {
                status: 503,
                retry_after: std::time::Duration::from_secs(1),
                message: "sk-canary-123".into(),
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

    #[test]
    fn a_secret_split_anywhere_in_a_stream_is_replaced_whole() {
        let redactor = Redactor::default()
            .with("sk-abc-123456")
            .with("Bearer tok-987654321");
        let text = "a sk-abc-123456 b tok-987654321 c sk-abc-12 sk-abc-123456";
        let expected = "a [redacted] b [redacted] c sk-abc-12 [redacted]";
        assert_eq!(redactor.text(text), expected);
        let bytes = text.as_bytes();
        for a in 0..bytes.len() {
            for b in a..bytes.len() {
                let mut stream = redactor.stream();
                let mut all = Vec::new();
                for piece in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                    let mut out = Vec::new();
                    all.extend_from_slice(stream.feed(piece, &mut out));
                }
                all.extend(stream.finish());
                assert_eq!(String::from_utf8_lossy(&all), expected, "cut at {a}, {b}");
            }
        }
    }

    #[test]
    fn a_cut_secret_at_the_end_of_a_truncated_text_is_replaced() {
        let redactor = Redactor::default().with("sk-abcdefgh");
        assert_eq!(redactor.truncated("key: sk-abcde"), "key: [redacted]");
        assert_eq!(
            redactor.truncated("key: sk-"),
            "key: sk-",
            "3 bytes say nothing"
        );
        assert_eq!(redactor.truncated("key: sk-abcdefgh"), "key: [redacted]");
    }

    #[test]
    fn secret_headers_are_recognised_by_name() {
        for name in [
            "Authorization",
            "api-key",
            "X-API-Key",
            "x-goog-api-key",
            "X-Auth-Token",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in [
            "x-team",
            "HTTP-Referer",
            "anthropic-version",
            "content-type",
        ] {
            assert!(!is_secret_header(name), "{name}");
        }
    }
}
