//! [`Report`]: an eval's results, as JSON a later run is compared against.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dataset::Case;
use crate::run::Run;
use crate::scorer::Score;

/// The version of the report's JSON form, in its `version` field.
pub const REPORT_VERSION: u32 = 1;

/// Scores closer than this are equal: a mean recomputed is not a drop.
const EPSILON: f64 = 1e-9;

/// The results of an eval: a summary and one [`CaseResult`] per case, in dataset order.
///
/// Its JSON ([`Report::to_json`]) holds no time or duration, so two runs that behaved
/// the same write the same report, and a report kept in a repository changes only when
/// a result does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The dataset's name (its path, when loaded from a file).
    pub dataset: String,
    /// What ran ([`Eval::label`](crate::Eval::label)); may be empty.
    pub label: String,
    /// The scorers' names, in the order they were added.
    pub scorers: Vec<String>,
    /// The totals.
    pub summary: Summary,
    /// Each case's result.
    pub cases: Vec<CaseResult>,
}

/// An eval's totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// How many cases ran.
    pub cases: usize,
    /// How many passed: ran, and passed every scorer that applied.
    pub passed: usize,
    /// How many did not.
    pub failed: usize,
    /// How many of the failed ones failed to run at all (the agent's error).
    pub errors: usize,
    /// Each scorer's mean value over the cases it applied to.
    pub means: BTreeMap<String, f64>,
}

/// One case's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseResult {
    /// The case's id.
    pub id: String,
    /// Whether the case ran and passed every scorer that applied (a case no scorer
    /// applies to passes by running).
    pub passed: bool,
    /// The agent's answer.
    pub answer: String,
    /// The tool calls the agent made: `name arguments`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<String>,
    /// Tokens used.
    pub tokens: u64,
    /// Why the case did not run, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each scorer that applied, by name.
    pub scores: BTreeMap<String, ScoreRecord>,
}

/// One scorer's result on one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScoreRecord {
    /// From 0 to 1.
    pub value: f64,
    /// Whether the case passed this scorer.
    pub passed: bool,
    /// What the scorer saw.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Why the scorer could not score (then `value` is 0 and `passed` false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<Score> for ScoreRecord {
    fn from(score: Score) -> Self {
        ScoreRecord {
            value: score.value.clamp(0.0, 1.0),
            passed: score.passed,
            detail: score.detail,
            error: None,
        }
    }
}

impl ScoreRecord {
    pub(crate) fn errored(error: String) -> Self {
        ScoreRecord {
            value: 0.0,
            passed: false,
            detail: String::new(),
            error: Some(error),
        }
    }
}

impl CaseResult {
    pub(crate) fn ran(case: &Case, run: &Run) -> Self {
        CaseResult {
            id: case.id.clone(),
            passed: true,
            answer: run.answer.clone(),
            tool_calls: run
                .tool_calls
                .iter()
                .map(|c| format!("{} {}", c.name, c.arguments))
                .collect(),
            tokens: run.tokens,
            error: None,
            scores: BTreeMap::new(),
        }
    }

    pub(crate) fn errored(case: &Case, error: String) -> Self {
        CaseResult {
            id: case.id.clone(),
            passed: false,
            answer: String::new(),
            tool_calls: Vec::new(),
            tokens: 0,
            error: Some(error),
            scores: BTreeMap::new(),
        }
    }

    pub(crate) fn add(&mut self, scorer: &str, record: ScoreRecord) {
        self.passed &= record.passed;
        self.scores.insert(scorer.to_owned(), record);
    }

    /// Why the case failed, in a few words: the run's error or the failed scorers.
    pub fn why(&self) -> String {
        if let Some(error) = &self.error {
            return format!("did not run: {error}");
        }
        self.scores
            .iter()
            .filter(|(_, s)| !s.passed)
            .map(|(name, s)| match (&s.error, s.detail.is_empty()) {
                (Some(error), _) => format!("{name}: error: {error}"),
                (None, false) => format!("{name}: {}", s.detail),
                (None, true) => name.clone(),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Why a report could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The file could not be read or written.
    #[error("cannot {action} the report {path}: {message}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// The text is not a report of this version.
    #[error("{source_name}: not an eval report: {message}")]
    Parse {
        /// The file (or the name given to [`Report::from_json`]).
        source_name: String,
        /// What is wrong.
        message: String,
    },
}

impl Report {
    pub(crate) fn new(
        dataset: &str,
        label: &str,
        scorers: Vec<String>,
        cases: Vec<CaseResult>,
    ) -> Self {
        let mut means = BTreeMap::new();
        for scorer in &scorers {
            let values: Vec<f64> = cases
                .iter()
                .filter_map(|c| c.scores.get(scorer))
                .map(|s| s.value)
                .collect();
            if !values.is_empty() {
                means.insert(
                    scorer.clone(),
                    values.iter().sum::<f64>() / values.len() as f64,
                );
            }
        }
        let passed = cases.iter().filter(|c| c.passed).count();
        Report {
            version: REPORT_VERSION,
            dataset: dataset.to_owned(),
            label: label.to_owned(),
            scorers,
            summary: Summary {
                cases: cases.len(),
                passed,
                failed: cases.len() - passed,
                errors: cases.iter().filter(|c| c.error.is_some()).count(),
                means,
            },
            cases,
        }
    }

    /// The report as pretty-printed JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        json.push('\n');
        json
    }

    /// A report from its JSON; `source` names it in errors.
    pub fn from_json(source: &str, text: &str) -> Result<Self, ReportError> {
        let error = |message: String| ReportError::Parse {
            source_name: source.to_owned(),
            message,
        };
        let report: Report = serde_json::from_str(text).map_err(|e| error(e.to_string()))?;
        if report.version != REPORT_VERSION {
            return Err(error(format!(
                "its version is {}, this harness reads version {REPORT_VERSION}",
                report.version
            )));
        }
        Ok(report)
    }

    /// Writes the report's JSON to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ReportError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|e| ReportError::Io {
            action: "write",
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Reads a report written by [`Report::save`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ReportError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ReportError::Io {
            action: "read",
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_json(&path.display().to_string(), &text)
    }

    /// The case of id `id`.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }

    /// What changed since `baseline`, an earlier report of the same dataset: cases
    /// that passed there and fail here, scores that dropped, cases that now pass, and
    /// cases only one of the two has.
    pub fn compare(&self, baseline: &Report) -> Comparison {
        let mut comparison = Comparison::default();
        for now in &self.cases {
            let Some(before) = baseline.case(&now.id) else {
                comparison.added.push(now.id.clone());
                continue;
            };
            if before.passed && !now.passed {
                comparison.regressions.push(Regression::NowFails {
                    id: now.id.clone(),
                    why: now.why(),
                });
            } else if !before.passed && now.passed {
                comparison.fixed.push(now.id.clone());
            }
            for (scorer, after) in &now.scores {
                if let Some(earlier) = before.scores.get(scorer)
                    && after.value < earlier.value - EPSILON
                {
                    comparison.regressions.push(Regression::ScoreDropped {
                        id: now.id.clone(),
                        scorer: scorer.clone(),
                        before: earlier.value,
                        after: after.value,
                    });
                }
            }
        }
        comparison.removed = baseline
            .cases
            .iter()
            .filter(|c| self.case(&c.id).is_none())
            .map(|c| c.id.clone())
            .collect();
        comparison
    }
}

/// What changed between two reports ([`Report::compare`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// What got worse, in case order.
    pub regressions: Vec<Regression>,
    /// Cases that failed in the baseline and pass now.
    pub fixed: Vec<String>,
    /// Cases the baseline does not have.
    pub added: Vec<String>,
    /// Cases of the baseline this run does not have.
    pub removed: Vec<String>,
}

/// One thing that got worse since the baseline.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Regression {
    /// The case passed in the baseline and fails now.
    NowFails {
        /// The case.
        id: String,
        /// Why it fails now ([`CaseResult::why`]).
        why: String,
    },
    /// A scorer's value for the case is lower than in the baseline.
    ScoreDropped {
        /// The case.
        id: String,
        /// The scorer.
        scorer: String,
        /// Its value in the baseline.
        before: f64,
        /// Its value now.
        after: f64,
    },
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Regression::NowFails { id, why } => write!(f, "{id}: passed before, fails now ({why})"),
            Regression::ScoreDropped {
                id,
                scorer,
                before,
                after,
            } => write!(f, "{id}: {scorer} dropped from {before:.2} to {after:.2}"),
        }
    }
}

impl Comparison {
    /// Whether nothing got worse.
    pub fn is_clean(&self) -> bool {
        self.regressions.is_empty()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.regressions.is_empty() {
            writeln!(f, "no regression")?;
        } else {
            writeln!(f, "{} regression(s):", self.regressions.len())?;
            for regression in &self.regressions {
                writeln!(f, "  {regression}")?;
            }
        }
        let lists = [
            ("fixed", &self.fixed),
            ("new", &self.added),
            ("gone", &self.removed),
        ];
        for (what, ids) in lists {
            if !ids.is_empty() {
                writeln!(f, "{what}: {}", ids.join(", "))?;
            }
        }
        Ok(())
    }
}
