//! [`Run`]: what one run of a case produced, the data the scorers and the report read
//! (the driver that makes runs is `eval.rs`).

use brute::{Env, Message, Outcome, Role, ToolCall};

/// What one run of a case produced, as the scorers see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// The text of the last assistant message (empty if the model said nothing).
    pub answer: String,
    /// Every tool call the agent made during the turn, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens the turn used, as the providers reported them (0 for scripted models).
    pub tokens: u64,
    /// The whole conversation of the turn.
    pub messages: Vec<Message>,
}

impl Run {
    /// A transcript of only an answer (no tool call, no conversation): for a closure
    /// that runs something other than an agent, and for tests of scorers.
    pub fn answer(answer: impl Into<String>) -> Self {
        Run {
            answer: answer.into(),
            ..Run::default()
        }
    }

    /// Adds a tool call the run made.
    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// The transcript of an agent's turn.
    pub fn from_outcome(outcome: &Outcome) -> Self {
        Self::from_env(&outcome.env)
    }

    /// The transcript of the turn `env` holds.
    pub fn from_env(env: &Env) -> Self {
        let answer = env
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Run {
            answer,
            tool_calls: env
                .messages
                .iter()
                .flat_map(|m| m.tool_calls.iter().cloned())
                .collect(),
            tokens: env.usage().total(),
            messages: env.messages.to_vec(),
        }
    }
}
