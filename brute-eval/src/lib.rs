//! An eval harness for [brute](https://docs.rs/brute) agents.
//!
//! - A [`Dataset`] of [`Case`]s, read from JSONL: an id, a prompt, optionally the
//!   expected answer and the tool calls the agent should make. A line that is not a
//!   case is an error naming the file, the line and the field.
//! - [`Scorer`]s: [`Exact`], [`Contains`], [`Regex`], [`JsonSchema`] (the answer is
//!   JSON matching a schema), [`ToolCalled`] (the expected calls were made, with their
//!   arguments) and [`Judge`] (a model grades the answer; an unreadable verdict is an
//!   error, never a pass). Implement [`Scorer`] for checks of your own.
//! - [`Eval`] runs an agent (any `brute_agent!` stack, or a closure that runs one turn)
//!   over the cases, a few at a time, with a progress bar on stderr when it is a
//!   terminal, and returns a [`Report`]: a table for the terminal ([`Report::table`])
//!   and JSON ([`Report::to_json`]) that a later run compares itself against
//!   ([`Report::compare`] lists the regressions: a case that passed and now fails, a
//!   score that dropped).
//!
//! Offline, the agent runs on a `ScriptedModel` or a `Replay` of recorded responses;
//! online, on any provider (`brute::providers::from_spec("openai:gpt-4o-mini")`).
//!
//! ```
//! use brute::{Message, brute_agent, providers::ScriptedModel};
//! use brute_eval::{Contains, Dataset, Eval, Exact, Report};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let dataset = Dataset::from_jsonl("capitals.jsonl", r#"
//! {"id": "fr", "prompt": "The capital of France?", "expected": "Paris"}
//! {"id": "it", "prompt": "The capital of Italy?", "expected": "Rome"}
//! "#)?;
//! let model = ScriptedModel::from_fn(|env| {
//!     let prompt = env.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
//!     Message::assistant(if prompt.contains("France") { "Paris" } else { "Milan" })
//! });
//! let agent = brute_agent! { run model; };
//! let eval = Eval::new(dataset).scorer(Exact::default()).scorer(Contains::default());
//! let report = eval.run_agent(&agent).await;
//! print!("{}", report.table());
//! assert_eq!(report.summary.passed, 1);
//!
//! // A later run, compared with this one: `it` did not get worse, so no regression.
//! let baseline = Report::from_json("baseline.json", &report.to_json())?;
//! assert!(eval.run_agent(&agent).await.compare(&baseline).is_clean());
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```

mod dataset;
mod eval;
mod judge;
mod report;
mod run;
mod schema;
mod scorer;
mod table;

pub use dataset::{Case, Dataset, DatasetError, ExpectedCall};
pub use eval::{Eval, Progress};
pub use judge::{JUDGE_INSTRUCTIONS, Judge};
pub use report::{
    CaseResult, Comparison, REPORT_VERSION, Regression, Report, ReportError, ScoreRecord, Summary,
};
pub use run::Run;
pub use schema::{Schema, SchemaError};
pub use scorer::{
    Contains, Exact, JsonSchema, Regex, Score, ScoreError, ScoreFuture, Scorer, ToolCalled,
};
