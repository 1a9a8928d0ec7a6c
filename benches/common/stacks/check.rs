//! What every row must produce before it is timed: the same transcript (roles, text,
//! calls and the ids results answer), the same advertised tools, passes and end, in a
//! form that neither brute's `Env` nor the independent rows' `Conv` owns.

use serde_json::Value;

/// One message, as the check compares it.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
    /// The tool calls: id, name, arguments.
    pub calls: Vec<(String, String, Value)>,
    /// On a tool result: the call it answers.
    pub call_id: Option<String>,
}

/// The work of one turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The transcript.
    pub messages: Vec<SummaryMessage>,
    /// The advertised tools: name, description, schema.
    pub tools: Vec<(String, String, Value)>,
    /// Model passes.
    pub passes: u32,
    /// Whether a guard ended the turn.
    pub limited: bool,
}

impl Summary {
    /// The figures of a brute env.
    pub fn of_env(env: &brute::Env) -> Self {
        Summary {
            messages: env
                .messages
                .iter()
                .map(|m| SummaryMessage {
                    role: m.role.to_string(),
                    content: m.content.clone(),
                    calls: m
                        .tool_calls
                        .iter()
                        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                        .collect(),
                    call_id: m.tool_call_id.clone(),
                })
                .collect(),
            tools: env
                .tools
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.description.clone(),
                        t.parameters.as_ref().clone(),
                    )
                })
                .collect(),
            passes: env.iteration,
            limited: env.should_exit.is_some(),
        }
    }

    /// Model calls in the turn: one per assistant message.
    pub fn model_calls(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.role == "assistant")
            .count()
    }
}
