//! [`Scorer`] and the scorers that need no model: [`Exact`], [`Contains`], [`Regex`],
//! [`JsonSchema`] and [`ToolCalled`].

use std::future::Future;
use std::pin::Pin;

use brute::structured::OutputSchema;
use serde_json::Value;

use crate::dataset::{Case, ExpectedCall};
use crate::run::Run;
use crate::schema::{Schema, SchemaError};

/// What a scorer says of one case: a value from 0 to 1, whether that is a pass, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// From 0 (wrong) to 1 (right); partial credit in between.
    pub value: f64,
    /// Whether the case passes this scorer.
    pub passed: bool,
    /// What the scorer saw, for the table and the report (empty on a plain pass).
    pub detail: String,
}

impl Score {
    /// A pass (value 1).
    pub fn pass() -> Self {
        Score {
            value: 1.0,
            passed: true,
            detail: String::new(),
        }
    }

    /// A failure (value 0), with what was wrong.
    pub fn fail(detail: impl Into<String>) -> Self {
        Score {
            value: 0.0,
            passed: false,
            detail: detail.into(),
        }
    }

    /// A pass when `passed`, else a failure with `detail`.
    pub fn check(passed: bool, detail: impl FnOnce() -> String) -> Self {
        if passed {
            Score::pass()
        } else {
            Score::fail(detail())
        }
    }
}

/// Why a scorer could not score a case (which then fails, with the error in the
/// report): not the same as a low score.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScoreError {
    /// The judge model's call failed.
    #[error("the judge `{judge}` failed: {message}")]
    JudgeFailed {
        /// The judge model's name.
        judge: String,
        /// The model's error.
        message: String,
    },
    /// The judge answered, but not with a verdict in the documented form.
    #[error("the judge `{judge}` gave no readable verdict ({reason}); it replied: {reply}")]
    Verdict {
        /// The judge model's name.
        judge: String,
        /// What is wrong with the reply.
        reason: String,
        /// The start of the reply (at most 200 characters).
        reply: String,
    },
    /// Any other reason, from a scorer of the application.
    #[error("{0}")]
    Other(String),
}

/// The future a [`Scorer`] returns: `Ok(None)` when the scorer does not apply to the
/// case (an [`Exact`] scorer on a case without an expected answer).
pub type ScoreFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Score>, ScoreError>> + Send + 'a>>;

/// Scores one run of a case. Implement it for a check of your own; the scorers of this
/// crate are examples.
///
/// ```
/// use brute_eval::{Case, Score, ScoreFuture, Scorer, Run};
///
/// /// Passes answers of at most 20 words.
/// struct Short;
///
/// impl Scorer for Short {
///     fn name(&self) -> &str {
///         "short"
///     }
///     fn score<'a>(&'a self, _case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
///         let words = run.answer.split_whitespace().count();
///         let score = Score::check(words <= 20, || format!("{words} words"));
///         Box::pin(async move { Ok(Some(score)) })
///     }
/// }
/// # let _ = Short;
/// ```
pub trait Scorer: Send + Sync {
    /// The scorer's column in the table and key in the report: unique in an eval.
    fn name(&self) -> &str;

    /// Scores `run`, the transcript of `case`.
    fn score<'a>(&'a self, case: &'a Case, run: &'a Run) -> ScoreFuture<'a>;
}

fn ready<'a>(score: Option<Score>) -> ScoreFuture<'a> {
    Box::pin(std::future::ready(Ok(score)))
}

/// The answer equals the case's `expected`, both trimmed of surrounding whitespace.
/// Does not apply to a case without `expected`.
#[derive(Clone, Debug, Default)]
pub struct Exact {
    ignore_case: bool,
}

impl Exact {
    /// Compares letters regardless of case.
    pub fn ignore_case(mut self) -> Self {
        self.ignore_case = true;
        self
    }
}

impl Scorer for Exact {
    fn name(&self) -> &str {
        "exact"
    }

    fn score<'a>(&'a self, case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        ready(case.expected.as_deref().map(|expected| {
            let (answer, expected) = (run.answer.trim(), expected.trim());
            let equal = if self.ignore_case {
                answer.to_lowercase() == expected.to_lowercase()
            } else {
                answer == expected
            };
            Score::check(equal, || format!("expected {expected:?}"))
        }))
    }
}

/// The answer contains the case's `expected` (trimmed). Does not apply to a case
/// without `expected`.
#[derive(Clone, Debug, Default)]
pub struct Contains {
    ignore_case: bool,
}

impl Contains {
    /// Looks for the expected text regardless of case.
    pub fn ignore_case(mut self) -> Self {
        self.ignore_case = true;
        self
    }
}

impl Scorer for Contains {
    fn name(&self) -> &str {
        "contains"
    }

    fn score<'a>(&'a self, case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        ready(case.expected.as_deref().map(|expected| {
            let expected = expected.trim();
            let found = if self.ignore_case {
                run.answer.to_lowercase().contains(&expected.to_lowercase())
            } else {
                run.answer.contains(expected)
            };
            Score::check(found, || format!("no {expected:?} in the answer"))
        }))
    }
}

/// The answer matches a regular expression (the `regex` crate's syntax; anywhere in
/// the answer unless anchored with `^` and `$`). Applies to every case.
#[derive(Clone, Debug)]
pub struct Regex {
    name: String,
    pattern: regex::Regex,
}

impl Regex {
    /// A scorer named `regex` for `pattern`; the error is the pattern's.
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        Ok(Regex {
            name: "regex".into(),
            pattern: regex::Regex::new(pattern)?,
        })
    }

    /// Renames the scorer (for two regex scorers in one eval).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Scorer for Regex {
    fn name(&self) -> &str {
        &self.name
    }

    fn score<'a>(&'a self, _case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        ready(Some(Score::check(
            self.pattern.is_match(&run.answer),
            || format!("does not match /{}/", self.pattern.as_str()),
        )))
    }
}

/// The answer is JSON (a code fence around it is allowed) matching a JSON Schema.
/// Applies to every case.
#[derive(Clone, Debug)]
pub struct JsonSchema {
    schema: Schema,
}

impl JsonSchema {
    /// A scorer for `schema`; refused when it uses a keyword [`Schema`] does not check.
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        Ok(JsonSchema {
            schema: Schema::new(schema)?,
        })
    }

    /// A scorer for the schema structured output sends the model
    /// ([`OutputSchema::schema`]: wrapped and strict as configured), so the answer is
    /// checked as the provider was asked to shape it.
    pub fn output(output: &OutputSchema) -> Result<Self, SchemaError> {
        Self::new(output.schema().clone())
    }
}

impl Scorer for JsonSchema {
    fn name(&self) -> &str {
        "json_schema"
    }

    fn score<'a>(&'a self, _case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        let score = match serde_json::from_str::<Value>(unfence(&run.answer)) {
            Err(e) => Score::fail(format!("not JSON: {e}")),
            Ok(value) => match self.schema.validate(&value) {
                Ok(()) => Score::pass(),
                Err(error) => Score::fail(error),
            },
        };
        ready(Some(score))
    }
}

/// Every tool call the case expects was made: the value is the share found, a pass
/// when all are. A call matches an expected one by name and by holding the expected
/// arguments (see [`ExpectedCall`]). Does not apply to a case that expects no call.
#[derive(Clone, Debug, Default)]
pub struct ToolCalled;

impl Scorer for ToolCalled {
    fn name(&self) -> &str {
        "tool_calls"
    }

    fn score<'a>(&'a self, case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        if case.tool_calls.is_empty() {
            return ready(None);
        }
        let missing: Vec<&ExpectedCall> = case
            .tool_calls
            .iter()
            .filter(|expected| !run.tool_calls.iter().any(|call| matches(expected, call)))
            .collect();
        let expected = case.tool_calls.len();
        let value = (expected - missing.len()) as f64 / expected as f64;
        let detail = if missing.is_empty() {
            String::new()
        } else {
            let made: Vec<String> = run.tool_calls.iter().map(describe).collect();
            format!(
                "missing {}; made {}",
                missing
                    .iter()
                    .map(|e| match &e.arguments {
                        Some(args) => format!("{} {}", e.name, Value::Object(args.clone())),
                        None => e.name.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                if made.is_empty() {
                    "no call".to_owned()
                } else {
                    made.join(", ")
                }
            )
        };
        ready(Some(Score {
            value,
            passed: missing.is_empty(),
            detail,
        }))
    }
}

fn matches(expected: &ExpectedCall, call: &brute::ToolCall) -> bool {
    if call.name != expected.name {
        return false;
    }
    let Some(wanted) = &expected.arguments else {
        return true;
    };
    let Some(given) = call.arguments.as_object() else {
        return wanted.is_empty();
    };
    wanted
        .iter()
        .all(|(key, value)| given.get(key) == Some(value))
}

fn describe(call: &brute::ToolCall) -> String {
    format!("{} {}", call.name, call.arguments)
}

/// `text` without surrounding whitespace and without a Markdown code fence around it.
pub(crate) fn unfence(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return text;
    };
    // The fence's info string (`json`) runs to the first newline.
    match inner.split_once('\n') {
        Some((_info, body)) => body.trim(),
        None => inner.trim(),
    }
}
