//! Secrets hidden from tool results.

use std::fmt;
use std::sync::Arc;

use crate::providers::ApiKey;

/// The values hidden from every tool result, each replaced by a placeholder naming it.
///
/// [`Secrets::from_env`] reads the process environment (which is what
/// [`DefaultToolPipeline`](super::DefaultToolPipeline) does by default, see its
/// `env_secrets` option), [`Secrets::with`] adds values given in code and
/// [`Secrets::with_api_keys`] adds API keys. A `Secrets` is plain data: it hides what
/// it was given and nothing else, and nothing in the process adds to it behind its back.
///
/// The model's own key needs no configuration: the terminal of an agent hands the keys
/// of its model ([`Model::secrets`](crate::Model::secrets), an HTTP provider's
/// `ApiKey`) to the tool pipeline through the env, and the pipeline hides them from
/// every result beside these.
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

    /// These secrets and the API keys `keys`, each hidden as `[redacted api key]`.
    /// Keys shorter than 8 characters are skipped: a placeholder key such as `ollama`
    /// would otherwise be cut out of every output.
    ///
    /// ```
    /// use brute::providers::ApiKey;
    /// use brute::tools::Secrets;
    ///
    /// let secrets = Secrets::default().with_api_keys(&[ApiKey::new("sk-in-code-0042")]);
    /// assert_eq!(secrets.redact("k=sk-in-code-0042"), "k=[redacted api key]");
    /// ```
    pub fn with_api_keys(self, keys: &[ApiKey]) -> Self {
        self.with_keys(keys.iter().map(ApiKey::expose))
    }

    /// [`Secrets::with_api_keys`] for keys as text (what [`Model::secrets`](crate::Model::secrets) gives).
    pub(crate) fn with_keys<'k>(self, keys: impl IntoIterator<Item = &'k str>) -> Self {
        let added = keys
            .into_iter()
            .filter(|key| key.chars().count() >= 8)
            .map(|key| ("[redacted api key]".to_string(), key.to_string()));
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

    /// Whether this set holds no values.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `text` with every secret replaced by its placeholder.
    pub fn redact(&self, text: &str) -> String {
        self.redact_owned(text.to_string())
    }

    /// [`Secrets::redact`] without a copy when there is nothing to hide. Inlined: with
    /// no secrets (the common case) a tool result costs a branch.
    #[inline]
    pub(crate) fn redact_owned(&self, text: String) -> String {
        // The check stays in the caller; the scan is out of line, so that this inlines
        // (measured: the whole loop was a call of its own for every result).
        if self.entries.is_empty() {
            text
        } else {
            self.redact_each(text)
        }
    }

    /// The scan of [`Secrets::redact_owned`] for a set that holds values.
    fn redact_each(&self, mut text: String) -> String {
        for (label, value) in self.entries.iter() {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), label);
            }
        }
        text
    }
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
    fn api_keys_are_hidden_as_api_keys_and_short_ones_skipped() {
        let keys = [ApiKey::new("sk-given-in-code-0042"), ApiKey::new("ollama")];
        let secrets = Secrets::default()
            .with(["own-secret-1"])
            .with_api_keys(&keys);
        let text = "a=sk-given-in-code-0042 b=own-secret-1 c=ollama";
        assert_eq!(
            secrets.redact(text),
            "a=[redacted api key] b=[redacted] c=ollama"
        );
        // Plain data: a key given to one set is not hidden by another.
        assert_eq!(Secrets::default().redact(text), text);
    }
}
