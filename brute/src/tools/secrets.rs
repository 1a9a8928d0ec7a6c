//! Secrets hidden from tool results.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// The values hidden from every tool result, each replaced by a placeholder naming it.
///
/// [`Secrets::from_env`] reads the process environment (which is what
/// [`DefaultToolPipeline`](super::DefaultToolPipeline) does by default, see its
/// `env_secrets` option), and [`Secrets::with`] adds values given in code. Beside
/// those, every `Secrets` hides the values [`hide_everywhere`] was given in this
/// process: a provider's API key (`OpenAi::new(..).api_key(..)`, or one read from the
/// environment) is registered there when it is made, so no tool result carries it
/// whatever the pipeline was told.
///
/// ```
/// use brute::tools::{Redactions, Secrets};
///
/// let secrets = Secrets::default().with(Redactions::from(["s3cr3t-value"]));
/// assert_eq!(secrets.redact("key=s3cr3t-value;"), "key=[redacted];");
/// assert_eq!(secrets.redact("nothing here"), "nothing here");
/// ```
#[derive(Clone, Default)]
pub struct Secrets {
    /// `(placeholder, value)`, longer values first so that a secret containing another
    /// is hidden whole.
    entries: Arc<[(String, String)]>,
}

impl Secrets {
    /// The values of environment variables whose names say they hold a secret
    /// (containing `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`, in
    /// any case) and that are 8 characters or longer, each hidden as
    /// `[redacted $NAME]`. Reads the process environment once, now.
    pub fn from_env() -> Self {
        let found: Vec<(String, String)> = std::env::vars()
            .filter(|(name, value)| is_secret_name(name) && value.len() >= 8)
            .map(|(name, value)| (format!("[redacted ${name}]"), value))
            .collect();
        Secrets::default().extend(found)
    }

    /// These secrets and the values of `redactions`, hidden as `[redacted]`.
    pub fn with(self, redactions: impl Into<Redactions>) -> Self {
        let added = redactions
            .into()
            .0
            .into_iter()
            .map(|value| ("[redacted]".to_string(), value));
        self.extend(added)
    }

    /// These secrets and those of `other`.
    pub(crate) fn union(self, other: &Secrets) -> Self {
        self.extend(other.entries.iter().cloned())
    }

    fn extend(self, more: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut entries: Vec<(String, String)> = self.entries.iter().cloned().collect();
        entries.extend(more);
        entries.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        Secrets {
            entries: entries.into(),
        }
    }

    /// Whether this set holds no values of its own (values given to
    /// [`hide_everywhere`] are hidden whatever this says).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `text` with every secret replaced by its placeholder.
    pub fn redact(&self, text: &str) -> String {
        self.redact_owned(text.to_string())
    }

    /// [`Secrets::redact`] without a copy when there is nothing to hide. Inlined: with
    /// no secrets (the common case) a tool result costs two branches.
    #[inline]
    pub(crate) fn redact_owned(&self, text: String) -> String {
        if self.entries.is_empty() && !HIDDEN_ANY.load(Ordering::Acquire) {
            return text;
        }
        self.redact_all(text)
    }

    fn redact_all(&self, text: String) -> String {
        let text = if HIDDEN_ANY.load(Ordering::Acquire) {
            let hidden = HIDDEN.read().unwrap_or_else(PoisonError::into_inner);
            replace_all(&hidden, text)
        } else {
            text
        };
        replace_all(&self.entries, text)
    }
}

/// `text` with each `(label, value)`'s value replaced by its label, in order.
fn replace_all(entries: &[(String, String)], mut text: String) -> String {
    for (label, value) in entries {
        if text.contains(value.as_str()) {
            text = text.replace(value.as_str(), label);
        }
    }
    text
}

/// The values hidden by every [`Secrets`] in this process, longest first.
static HIDDEN: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());
/// Whether [`HIDDEN`] holds anything, so that redaction takes no lock until it does.
static HIDDEN_ANY: AtomicBool = AtomicBool::new(false);

/// Hides `value` from every tool result in this process from now on, as `label`
/// (`[redacted api key]` for a provider's key). For secrets that live in code rather
/// than in a pipeline's options: the providers call it for their API keys.
///
/// Values shorter than 8 characters are ignored (a placeholder key such as `ollama`
/// would otherwise be cut out of every output), and a value given twice is kept once.
/// Values stay registered for the life of the process.
///
/// ```
/// use brute::tools::{Secrets, hide_everywhere};
///
/// hide_everywhere("[redacted db password]", "pa55-w0rd-in-code");
/// // Any `Secrets`, even an empty one, now hides it.
/// assert_eq!(Secrets::default().redact("pw=pa55-w0rd-in-code"), "pw=[redacted db password]");
/// ```
pub fn hide_everywhere(label: &str, value: impl Into<String>) {
    let value = value.into();
    if value.chars().count() < 8 {
        return;
    }
    let mut hidden = HIDDEN.write().unwrap_or_else(PoisonError::into_inner);
    if hidden.iter().any(|(_, known)| *known == value) {
        return;
    }
    hidden.push((label.to_string(), value));
    hidden.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
    HIDDEN_ANY.store(true, Ordering::Release);
}

impl fmt::Debug for Secrets {
    /// The placeholders only, never the values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(label, _)| label))
            .finish()
    }
}

/// Whether an environment variable named `name` holds a secret.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|word| upper.contains(word))
}

/// Extra values to hide from tool outputs, given in code (see [`Secrets::with`]).
///
/// ```
/// let redactions = brute::tools::Redactions::from(["db-password-123"]);
/// # let _ = redactions;
/// ```
#[derive(Clone, Default)]
pub struct Redactions(Vec<String>);

impl fmt::Debug for Redactions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactions({} values)", self.0.len())
    }
}

impl<const N: usize> From<[&str; N]> for Redactions {
    fn from(values: [&str; N]) -> Self {
        Redactions(
            values
                .iter()
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string())
                .collect(),
        )
    }
}

impl From<Vec<String>> for Redactions {
    fn from(values: Vec<String>) -> Self {
        Redactions(values.into_iter().filter(|v| !v.is_empty()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_and_redaction() {
        assert!(is_secret_name("OPENAI_API_KEY") && is_secret_name("github_token"));
        assert!(
            is_secret_name("DB_PASSWORD") && !is_secret_name("HOME") && !is_secret_name("PATH")
        );
        let secrets = Secrets::default().with(["s3cr3t-value", "s3cr3t-value-longer"]);
        assert_eq!(secrets.redact("key=s3cr3t-value;"), "key=[redacted];");
        assert_eq!(secrets.redact("k=s3cr3t-value-longer"), "k=[redacted]");
        assert_eq!(secrets.redact("nothing here"), "nothing here");
        assert!(!format!("{secrets:?}").contains("s3cr3t"));
        assert!(Secrets::default().is_empty());
    }

    #[test]
    fn values_hidden_everywhere_reach_every_secrets() {
        let own = Secrets::default().with(["own-secret-1"]);
        hide_everywhere("[redacted api key]", "sk-registered-in-code-0042");
        hide_everywhere("[redacted api key]", "sk-registered-in-code-0042");
        hide_everywhere("[redacted]", "short");
        let text = "a=sk-registered-in-code-0042 b=own-secret-1 c=short";
        assert_eq!(
            own.redact(text),
            "a=[redacted api key] b=[redacted] c=short"
        );
        assert_eq!(
            Secrets::default().redact(text),
            "a=[redacted api key] b=own-secret-1 c=short"
        );
        let hidden = HIDDEN.read().unwrap_or_else(PoisonError::into_inner);
        let copies = hidden.iter().filter(|(_, v)| v.contains("0042")).count();
        assert_eq!(copies, 1, "a value given twice is kept once");
    }
}
