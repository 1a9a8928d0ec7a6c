//! [`Judge`]: a model grades the answer.

use brute::{Env, Message, Model};
use serde_json::Value;

use crate::dataset::Case;
use crate::run::Run;
use crate::scorer::{Score, ScoreError, ScoreFuture, Scorer, unfence};

/// The judge's system prompt: what it grades and the one form its reply must take.
pub const JUDGE_INSTRUCTIONS: &str = "You grade the answer an AI assistant gave to a question. \
Judge only whether the answer is correct and meets the criteria; ignore style and length \
unless the criteria mention them. When an expected answer is given, the answer passes if it \
agrees with it in substance (it may say more, or say it differently). Reply with one JSON \
object and nothing else: {\"pass\": true or false, \"reason\": \"one sentence\"}.";

/// A model grades each answer: passes or fails it, with a reason.
///
/// Each case is one call of the judge model (not an agent: no tools, no loop) on a
/// conversation of two messages:
///
/// - the system message [`JUDGE_INSTRUCTIONS`];
/// - a user message with four parts, each under its heading: `Question:` (the case's
///   prompt), `Expected answer:` (the case's `expected`, or a line saying there is
///   none), `Criteria:` (those given with [`Judge::criteria`], or a line saying there
///   are none) and `Answer to grade:` (the agent's answer).
///
/// The reply must be a JSON object (a code fence around it is allowed) with a boolean
/// `pass` and, optionally, a string `reason`, which becomes the score's detail. Any
/// other reply (prose, `"pass": "yes"`, no `pass`) is [`ScoreError::Verdict`], never
/// a pass; a failed call is [`ScoreError::JudgeFailed`]. Applies to every case.
///
/// ```
/// use brute::{Message, providers::ScriptedModel};
/// use brute_eval::{Case, Judge, Scorer, Run};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let judge = Judge::new(ScriptedModel::new([
///     Message::assistant(r#"{"pass": true, "reason": "Paris is right."}"#),
///     Message::assistant("I think it is fine."),
/// ]));
/// let case = Case::new("capital", "The capital of France?").expect("Paris");
/// let run = Run::answer("It is Paris.");
/// let score = judge.score(&case, &run).await?.expect("the judge applies to every case");
/// assert!(score.passed);
/// assert_eq!(score.detail, "Paris is right.");
/// // Prose is not a verdict.
/// assert!(judge.score(&case, &run).await.is_err());
/// # Ok::<(), brute_eval::ScoreError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Judge<M> {
    model: M,
    name: String,
    criteria: Option<String>,
}

impl<M: Model> Judge<M> {
    /// A judge scorer named `judge`, on `model` (any model: a provider from
    /// `brute::providers::from_spec`, a `ScriptedModel`, a closure).
    pub fn new(model: M) -> Self {
        Judge {
            model,
            name: "judge".into(),
            criteria: None,
        }
    }

    /// What the answer must do beyond being right ("cites a source", "is polite"),
    /// sent under `Criteria:`.
    pub fn criteria(mut self, criteria: impl Into<String>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    /// Renames the scorer (for two judges in one eval).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The user message the judge gets for `case` and `answer`.
    pub fn prompt(&self, case: &Case, answer: &str) -> String {
        let expected = case
            .expected
            .as_deref()
            .unwrap_or("(none given: judge whether the answer is correct)");
        let criteria = self.criteria.as_deref().unwrap_or("(none)");
        format!(
            "Question:\n{}\n\nExpected answer:\n{expected}\n\nCriteria:\n{criteria}\n\nAnswer to grade:\n{answer}",
            case.prompt
        )
    }

    async fn grade(&self, case: &Case, run: &Run) -> Result<Score, ScoreError> {
        let mut env = Env::new();
        env.messages.push(Message::system(JUDGE_INSTRUCTIONS));
        env.messages
            .push(Message::user(self.prompt(case, &run.answer)));
        let completion = self
            .model
            .complete(&env)
            .await
            .map_err(|e| ScoreError::JudgeFailed {
                judge: self.model.name().to_owned(),
                message: e.to_string(),
            })?;
        parse_verdict(&completion.message.content).map_err(|reason| ScoreError::Verdict {
            judge: self.model.name().to_owned(),
            reason,
            reply: completion.message.content.chars().take(200).collect(),
        })
    }
}

impl<M: Model> Scorer for Judge<M> {
    fn name(&self) -> &str {
        &self.name
    }

    fn score<'a>(&'a self, case: &'a Case, run: &'a Run) -> ScoreFuture<'a> {
        Box::pin(async move { self.grade(case, run).await.map(Some) })
    }
}

/// The verdict in a judge's reply, or what is wrong with the reply.
fn parse_verdict(reply: &str) -> Result<Score, String> {
    let value: Value = serde_json::from_str(unfence(reply))
        .map_err(|_| "the reply is not a JSON object".to_owned())?;
    let Value::Object(verdict) = value else {
        return Err("the reply is JSON but not an object".into());
    };
    let passed = match verdict.get("pass") {
        Some(Value::Bool(passed)) => *passed,
        Some(_) => return Err("`pass` is not a boolean".into()),
        None => return Err("the object has no `pass`".into()),
    };
    let reason = match verdict.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(reason)) => reason.clone(),
        Some(_) => return Err("`reason` is not a string".into()),
    };
    Ok(Score {
        value: if passed { 1.0 } else { 0.0 },
        passed,
        detail: reason,
    })
}
