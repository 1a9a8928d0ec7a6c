//! [`Eval`]: runs an agent over a dataset's cases and scores each run.

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

use brute::{Agent, Env, Handler};
use futures_util::StreamExt;

use crate::dataset::{Case, Dataset};
use crate::report::{CaseResult, Report, ScoreRecord};
use crate::run::Run;
use crate::scorer::Scorer;

/// Whether [`Eval`] draws a progress bar on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// When stderr is a terminal (the default): never into a pipe or a CI log.
    #[default]
    Auto,
    /// Never.
    Off,
}

/// Which cases a scorer applies to.
type Filter = Arc<dyn Fn(&Case) -> bool + Send + Sync>;

/// An eval: a dataset, scorers, a concurrency limit. [`Eval::run_agent`] (or
/// [`Eval::run`] with a closure) runs every case and returns the [`Report`].
///
/// ```
/// use brute::{Message, brute_agent, providers::ScriptedModel};
/// use brute_eval::{Case, Contains, Dataset, Eval};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::per_turn([Message::assistant("Paris, of course.")]);
/// let agent = brute_agent! { run model; };
/// let dataset = Dataset::new("capitals", [
///     Case::new("fr", "The capital of France?").expect("Paris"),
///     Case::new("de", "The capital of Germany?").expect("Berlin"),
/// ]);
/// let report = Eval::new(dataset).scorer(Contains::default()).run_agent(&agent).await;
/// assert_eq!((report.summary.passed, report.summary.failed), (1, 1));
/// println!("{}", report.table());
/// # });
/// ```
pub struct Eval {
    dataset: Dataset,
    scorers: Vec<(Arc<dyn Scorer>, Option<Filter>)>,
    concurrency: usize,
    progress: Progress,
    label: String,
}

impl Eval {
    /// An eval of `dataset` with no scorer yet, four cases at a time.
    pub fn new(dataset: Dataset) -> Self {
        Eval {
            dataset,
            scorers: Vec::new(),
            concurrency: 4,
            progress: Progress::Auto,
            label: String::new(),
        }
    }

    /// Adds a scorer. Every scorer that applies to a case must pass for the case to.
    pub fn scorer(mut self, scorer: impl Scorer + 'static) -> Self {
        self.scorers.push((Arc::new(scorer), None));
        self
    }

    /// Adds a scorer for the cases `applies` picks, on top of the scorer's own rule (a
    /// [`JsonSchema`](crate::JsonSchema) scorer for the cases that ask for JSON).
    ///
    /// ```
    /// # use brute_eval::{Dataset, Eval, JsonSchema};
    /// # let dataset = Dataset::new("d", []);
    /// let eval = Eval::new(dataset).scorer_when(
    ///     JsonSchema::new(serde_json::json!({"type": "object"}))?,
    ///     |case| case.id.starts_with("json-"),
    /// );
    /// # Ok::<(), brute_eval::SchemaError>(())
    /// ```
    pub fn scorer_when(
        mut self,
        scorer: impl Scorer + 'static,
        applies: impl Fn(&Case) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.scorers
            .push((Arc::new(scorer), Some(Arc::new(applies))));
        self
    }

    /// How many cases run at once (at least 1). A model that answers calls in the
    /// order they come, whatever they ask (a [`Replay`](brute::providers::Replay)
    /// tape, a `ScriptedModel::new` sequence), needs 1: then the cases run in dataset
    /// order, one call after the other, as the recording was made.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit.max(1);
        self
    }

    /// Whether to draw a progress bar.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// What the report says ran (a model's name, a commit): shown in the table's title.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// The dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// Runs every case as one turn of `agent` (a fresh env with the prompt as its user
    /// message) and scores it.
    pub async fn run_agent<S: Handler<Env>>(&self, agent: &Agent<S>) -> Report {
        self.run(async |case: &Case| {
            agent
                .start(case.prompt.clone())
                .await
                .map(|outcome| Run::from_outcome(&outcome))
        })
        .await
    }

    /// Runs every case with `run_case`, at most [`Eval::concurrency`] at once on the
    /// caller's task, and scores each. A case whose run fails is a failed case with the
    /// error in the report; the others still run.
    pub async fn run<F, E>(&self, run_case: F) -> Report
    where
        F: AsyncFn(&Case) -> Result<Run, E>,
        E: Display,
    {
        let mut bar = Bar::new(self.progress, self.dataset.len());
        let run_case = &run_case;
        let mut results: Vec<(usize, CaseResult)> =
            futures_util::stream::iter(self.dataset.cases().iter().enumerate())
                .map(|(index, case)| async move {
                    let result = match run_case(case).await {
                        Ok(run) => self.score(case, &run).await,
                        Err(error) => CaseResult::errored(case, error.to_string()),
                    };
                    (index, result)
                })
                .buffer_unordered(self.concurrency)
                .inspect(|(_, result)| bar.tick(result.passed))
                .collect()
                .await;
        bar.finish();
        results.sort_by_key(|(index, _)| *index);
        Report::new(
            self.dataset.name(),
            &self.label,
            self.scorers
                .iter()
                .map(|(s, _)| s.name().to_owned())
                .collect(),
            results.into_iter().map(|(_, result)| result).collect(),
        )
    }

    async fn score(&self, case: &Case, run: &Run) -> CaseResult {
        let mut result = CaseResult::ran(case, run);
        for (scorer, applies) in &self.scorers {
            if applies.as_ref().is_some_and(|applies| !applies(case)) {
                continue;
            }
            let record = match scorer.score(case, run).await {
                Ok(None) => continue,
                Ok(Some(score)) => ScoreRecord::from(score),
                Err(error) => ScoreRecord::errored(error.to_string()),
            };
            result.add(scorer.name(), record);
        }
        result
    }
}

/// The progress bar: one line on stderr, redrawn as each case finishes.
struct Bar {
    enabled: bool,
    total: usize,
    done: usize,
    passed: usize,
}

const BAR_WIDTH: usize = 30;

impl Bar {
    fn new(progress: Progress, total: usize) -> Self {
        let enabled = match progress {
            Progress::Auto => std::io::stderr().is_terminal(),
            Progress::Off => false,
        };
        let bar = Bar {
            enabled,
            total,
            done: 0,
            passed: 0,
        };
        bar.draw();
        bar
    }

    fn tick(&mut self, passed: bool) {
        self.done += 1;
        self.passed += usize::from(passed);
        self.draw();
    }

    fn draw(&self) {
        if !self.enabled {
            return;
        }
        let filled = (self.done * BAR_WIDTH)
            .checked_div(self.total)
            .unwrap_or(BAR_WIDTH);
        let line = format!(
            "\r[{}{}] {}/{} cases, {} passed, {} failed",
            "#".repeat(filled),
            "-".repeat(BAR_WIDTH - filled),
            self.done,
            self.total,
            self.passed,
            self.done - self.passed,
        );
        let mut stderr = std::io::stderr().lock();
        // A progress bar that cannot be drawn is no reason to stop the eval.
        let _ = stderr.write_all(line.as_bytes());
        let _ = stderr.flush();
    }

    fn finish(&self) {
        if self.enabled {
            // Clears the line, so the table starts on a clean one.
            let _ = std::io::stderr().write_all(b"\r\x1b[2K");
        }
    }
}
