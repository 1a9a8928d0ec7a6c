//! `SystemPrompt`: prepends the system message each turn.

use std::fmt;
use std::sync::Arc;

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::trace::traced;

/// The text of a system prompt, or a builder that writes it from the env each turn
/// (see [`Prompt::environment`] for the model's name, working directory, date and
/// project rules).
#[derive(Clone)]
pub enum Prompt {
    /// Fixed text.
    Text(Arc<str>),
    /// Built each turn from the env.
    Builder(Arc<dyn Fn(&Env) -> String + Send + Sync>),
}

impl Prompt {
    /// A prompt built each turn by `f`.
    ///
    /// ```
    /// use brute::middleware::Prompt;
    /// let prompt = Prompt::build(|env| format!("You are on pass {}.", env.iteration));
    /// # let _ = prompt;
    /// ```
    pub fn build(f: impl Fn(&Env) -> String + Send + Sync + 'static) -> Self {
        Prompt::Builder(Arc::new(f))
    }

    /// `text` followed by what the model should know about where it runs, rebuilt each
    /// turn: the model's name and the project's rules (when set on the returned
    /// [`Environment`]), the working directory, whether it is a git repository, the
    /// platform and today's date.
    ///
    /// ```
    /// use brute::Env;
    /// use brute::middleware::Prompt;
    ///
    /// let prompt: Prompt = Prompt::environment("You are terse.")
    ///     .model("qwen3")
    ///     .rules("Never edit vendor/.")
    ///     .dir("/srv/project")
    ///     .into();
    /// let text = prompt.render(&Env::new());
    /// assert!(text.starts_with("You are terse.\n\nYou are powered by the model named qwen3."));
    /// assert!(text.contains("Working directory: /srv/project"));
    /// assert!(text.ends_with("# Project-Specific Rules\n\nNever edit vendor/."));
    /// ```
    pub fn environment(text: impl Into<String>) -> Environment {
        Environment {
            text: text.into(),
            model: None,
            rules: None,
            dir: None,
        }
    }

    /// The prompt's text for `env`.
    #[inline]
    pub fn render(&self, env: &Env) -> String {
        match self {
            Prompt::Text(text) => String::from(&**text),
            Prompt::Builder(f) => f(env),
        }
    }
}

/// The environment prompt, built by [`Prompt::environment`]: configure it, then turn it
/// into a [`Prompt`] (`.into()`, or pass it where a prompt is expected).
#[derive(Clone, Debug)]
pub struct Environment {
    text: String,
    model: Option<String>,
    rules: Option<String>,
    dir: Option<std::path::PathBuf>,
}

impl Environment {
    /// The model's name, told to the model ("You are powered by the model named ..").
    /// Default: not mentioned.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = Some(name.into());
        self
    }

    /// The project's rules, appended under "# Project-Specific Rules". Default: none.
    pub fn rules(mut self, rules: impl Into<String>) -> Self {
        self.rules = Some(rules.into());
        self
    }

    /// The working directory to describe. Default: the process's current directory
    /// when the prompt is rendered.
    pub fn dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    fn render(&self) -> String {
        let mut out = self.text.clone();
        if let Some(model) = &self.model {
            out.push_str(&format!("\n\nYou are powered by the model named {model}."));
        }
        let dir = self.dir.clone().or_else(|| std::env::current_dir().ok());
        let cwd = dir
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let git = dir.is_some_and(|d| d.ancestors().any(|a| a.join(".git").exists()));
        out.push_str(&format!(
            "\n\n<env>\nWorking directory: {cwd}\nIs directory a git repo: {}\nPlatform: {}\nToday's date: {}\n</env>",
            if git { "yes" } else { "no" },
            std::env::consts::OS,
            today(),
        ));
        if let Some(rules) = &self.rules {
            out.push_str(&format!("\n\n# Project-Specific Rules\n\n{rules}"));
        }
        out
    }
}

impl From<Environment> for Prompt {
    fn from(environment: Environment) -> Self {
        Prompt::build(move |_env| environment.render())
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}

impl Default for Prompt {
    fn default() -> Self {
        Prompt::Text(Arc::from(DEFAULT_PROMPT))
    }
}

/// The prompt `SystemPrompt` uses when given none.
pub const DEFAULT_PROMPT: &str = "You are a capable assistant working in the user's project. \
Use the tools you are given when they help, check your work, and answer concisely.";

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt::Text(Arc::from(text))
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt::Text(Arc::from(text))
    }
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prompt::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Prompt::Builder(_) => f.write_str("Builder(..)"),
        }
    }
}

/// Prepends the system message on the way in, unless the conversation already starts
/// with one. An empty prompt adds nothing.
///
/// ```
/// use brute::{Message, Role, brute_agent};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use brute::middleware::SystemPrompt { prompt: "You are terse." };
///     run |_env| async { Ok(Message::assistant("ok")) };
/// };
/// let outcome = agent.start("hi").await?;
/// assert_eq!(outcome.env.messages[0], Message::system("You are terse."));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `prompt` | `impl Into<`[`Prompt`]`>`: `&str`, `String`, [`Prompt::build`], [`Prompt::environment`] | [`DEFAULT_PROMPT`] | the system message's text, or how to write it each turn |
///
/// Placement: anywhere; usually just inside `SessionLog` (the system message is not
/// part of the stored record) and outside the loop (added once per turn).
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct SystemPrompt<A> {
    app: A,
    /// The prompt: text (`"You are terse."`) or [`Prompt::build`].
    #[middleware(into)]
    prompt: Prompt,
}

impl<A: Handler<Env>> Handler<Env> for SystemPrompt<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.system_prompt",
            brute.layer = "SystemPrompt",
            brute.system_prompt.added = tracing::field::Empty,
        );
        let _entered = span.enter();
        if env.messages.first().is_none_or(|m| m.role != Role::System) {
            let text = self.prompt.render(env);
            if !text.is_empty() {
                env.messages.insert(0, Message::system(text));
                if !span.is_disabled() {
                    span.record("brute.system_prompt.added", true);
                }
            }
        }
        drop(_entered);
        traced!(self.app.call(env), span)
    }
}
