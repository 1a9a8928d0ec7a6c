//! `question`: asks the user through a handler the application supplies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// One choice of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// The short label the user picks.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionItem {
    /// The full question.
    pub question: String,
    /// A short header (a few words) naming the question.
    pub header: String,
    /// The choices.
    pub options: Vec<QuestionOption>,
    /// Whether several choices may be picked (default false).
    #[serde(default)]
    pub multiple: bool,
}

/// Arguments of `question`, and what the application's handler receives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Questions {
    /// The questions to ask, in order.
    pub questions: Vec<QuestionItem>,
}

/// `question`: asks the user multiple-choice questions through the context's
/// [`QuestionHandler`](crate::tools::QuestionHandler); without a handler (a
/// non-interactive run) it returns an error result saying so. Questions of calls running
/// at the same time are asked one call after the other.
#[derive(Clone, Copy, Debug, Default)]
pub struct Question;

impl Tool for Question {
    type Args = Questions;

    fn name(&self) -> &str {
        "question"
    }

    fn description(&self) -> &str {
        "Ask the user one or more multiple-choice questions and wait for the answers."
    }

    async fn call(&self, args: Questions, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.questions.is_empty() {
            return Err(ToolError::InvalidArguments {
                field: "questions".into(),
                problem: "argument `questions` is empty; ask at least one question".into(),
            });
        }
        let headers: Vec<String> = args.questions.iter().map(|q| q.header.clone()).collect();
        let _turn = cx.asking().await;
        let Some(pending) = cx.questions().ask(args) else {
            return Err(ToolError::failed(
                "cannot ask questions: this run is not interactive (the application set no question handler)",
            ));
        };
        let answers = pending
            .await
            .map_err(|e| ToolError::failed(format!("the question was not answered: {e}")))?;
        if answers.len() != headers.len() {
            return Err(ToolError::failed(format!(
                "the question handler returned {} answers for {} questions",
                answers.len(),
                headers.len()
            )));
        }
        let parts: Vec<String> = headers
            .iter()
            .zip(answers.iter())
            .map(|(header, labels)| format!("\"{header}\" = {}", labels.join(", ")))
            .collect();
        Ok(format!("User answered: {}", parts.join("; ")).into())
    }
}
