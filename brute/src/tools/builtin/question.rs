//! `question`: asks the user through a handler the application supplies.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput};

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

/// Answers to one `question` call: for each question, the labels the user chose.
pub type Answers = Vec<Vec<String>>;

/// The application's handler for the `question` tool: shows the questions to the user
/// and returns the chosen labels, or an error message.
///
/// ```
/// use brute::tools::{Question, QuestionHandler};
///
/// let handler = QuestionHandler::new(|questions| async move {
///     Ok(questions.questions.iter().map(|q| vec![q.options[0].label.clone()]).collect())
/// });
/// let tool = Question::new(handler);
/// # let _ = tool;
/// ```
#[derive(Clone)]
pub struct QuestionHandler(Arc<AskFn>);

type AskFn = dyn Fn(Questions) -> BoxFuture<'static, Result<Answers, String>> + Send + Sync;

impl QuestionHandler {
    /// A handler answering with `f`.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Questions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answers, String>> + Send + 'static,
    {
        QuestionHandler(Arc::new(move |q| Box::pin(f(q))))
    }
}

impl fmt::Debug for QuestionHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QuestionHandler")
    }
}

/// `question`: asks the user multiple-choice questions through its
/// [`QuestionHandler`]; without one (a non-interactive run, the default) it returns an
/// error result saying so. Questions of calls running at the same time are asked one
/// call after the other.
///
/// Configured on the tool: `Question::new(handler)` in the tool set, for instance
/// `Tools::all_with(Question::new(handler), Delegate::NONE)`.
#[derive(Debug)]
pub struct Question {
    handler: Option<QuestionHandler>,
    /// Held while the user is asked.
    asking: tokio::sync::Mutex<()>,
}

impl Question {
    /// `question` without a handler: every call reports that no one can be asked.
    // Each use of the constant is a new tool with its own (unlocked) mutex, which is
    // what a tool set wants.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const NONE: Question = Question {
        handler: None,
        asking: tokio::sync::Mutex::const_new(()),
    };

    /// `question` answered by `handler`.
    pub fn new(handler: QuestionHandler) -> Self {
        Question {
            handler: Some(handler),
            asking: tokio::sync::Mutex::const_new(()),
        }
    }
}

impl Default for Question {
    fn default() -> Self {
        Question::NONE
    }
}

impl Tool for Question {
    type Args = Questions;

    fn name(&self) -> &str {
        "question"
    }

    fn description(&self) -> &str {
        "Ask the user one or more multiple-choice questions and wait for the answers."
    }

    async fn call(&self, args: Questions, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.questions.is_empty() {
            return Err(ToolError::InvalidArguments {
                field: "questions".into(),
                problem: "argument `questions` is empty; ask at least one question".into(),
            });
        }
        let Some(handler) = &self.handler else {
            return Err(ToolError::failed(
                "cannot ask questions: this run is not interactive (the application set no question handler: `Question::new(handler)`)",
            ));
        };
        let headers: Vec<String> = args.questions.iter().map(|q| q.header.clone()).collect();
        let _turn = self.asking.lock().await;
        let answers = (handler.0)(args)
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
