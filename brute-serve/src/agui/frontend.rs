//! Front-end tools: the run's `tools` offered to the model as tools the client runs
//! ([`ClientTools`]), and the `tool` messages of the next run read as their results.
//!
//! A call to a front-end tool pauses the turn durably, as a call waiting for approval
//! does (the session holds a placeholder result). The run that answers it ends its
//! `messages` with `tool` messages; each that answers a front-end call the thread
//! waits for becomes a [`Verdict::Answer`] on that call. The client also holds (and
//! sends back) the results of the agent's own tools, which the session has already:
//! those are skipped. A `tool` message for a call answered already, for a call of the
//! agent's own that waits for approval, or for a call the thread does not have, is a
//! refusal: the run ends with `RUN_ERROR`.

use brute::model::ToolSpec;
use brute::session::SessionId;
use brute::stream::{ApprovalDecision, Verdict, pending_approvals};
use brute::tools::ClientTools;
use brute::{Env, Message, Role};
use serde_json::json;

use super::events::Progress;
use super::wire::{FrontEndTool, InputMessage};
use crate::error::ApiError;
use crate::state::Shared;

/// The run's front-end tools: their specs, for the model, and their names, for the
/// tool pipeline.
pub(crate) struct FrontEnd {
    specs: Vec<ToolSpec>,
    client: ClientTools,
}

impl FrontEnd {
    /// The front-end tools of the input's `tools`: each named (uniquely), its
    /// `parameters` a JSON Schema object (none: no arguments).
    pub(crate) fn of(tools: &[FrontEndTool]) -> Result<FrontEnd, ApiError> {
        let mut specs: Vec<ToolSpec> = Vec::with_capacity(tools.len());
        for (index, tool) in tools.iter().enumerate() {
            if tool.name.is_empty() {
                return Err(ApiError::invalid(format!("tools[{index}].name: empty")));
            }
            if specs.iter().any(|spec| spec.name == tool.name) {
                return Err(ApiError::invalid(format!(
                    "tools[{index}].name: `{}` is given twice",
                    tool.name
                )));
            }
            let parameters = match &tool.parameters {
                None => json!({"type": "object", "properties": {}}),
                Some(p @ serde_json::Value::Object(_)) => p.clone(),
                Some(_) => {
                    return Err(ApiError::invalid(format!(
                        "tools[{index}].parameters (tool `{}`): expected a JSON Schema object",
                        tool.name
                    )));
                }
            };
            specs.push(ToolSpec::new(
                tool.name.clone(),
                tool.description.clone(),
                parameters,
            ));
        }
        let client = ClientTools::new(specs.iter().map(|spec| spec.name.clone()));
        Ok(FrontEnd { specs, client })
    }

    /// The names of the tools.
    pub(crate) fn client(&self) -> &ClientTools {
        &self.client
    }

    /// Offers the tools in `env` (the tool pipeline then leaves their calls to the
    /// client, and refuses the turn when one has the name of one of its own).
    pub(crate) fn install(&self, env: &mut Env) {
        if self.specs.is_empty() {
            return;
        }
        env.tools.extend(self.specs.iter().cloned());
        env.extensions.insert(self.client.clone());
    }
}

/// The client's result for a front-end call the thread waits for.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The call.
    pub(crate) call_id: String,
    /// What the tool returned (or how it failed).
    pub(crate) content: String,
}

impl Answer {
    /// The decision that stores the result and resumes the turn.
    pub(crate) fn decision(&self) -> ApprovalDecision {
        ApprovalDecision::new(
            self.call_id.clone(),
            Verdict::Answer {
                content: self.content.clone(),
            },
        )
    }
}

/// The answers of a run whose `messages` end in `tool` messages, checked against the
/// stored session of `thread`; `Ok(Err(why))` is a refusal, for `RUN_ERROR`. The
/// calls the thread waits for are shown to `progress` (for the run's outcome), and
/// so are the answered ones (their results are the client's already).
pub(crate) async fn answers(
    shared: &Shared,
    thread: &str,
    messages: &[InputMessage],
    front: &FrontEnd,
    progress: &mut Progress,
) -> Result<Result<Vec<Answer>, String>, ApiError> {
    let history = shared.history(thread).await?;
    let pending = pending_approvals(&history);
    for call in &pending {
        progress.saw(call);
    }
    let shown = crate::session_id::shown(thread);
    let start = messages
        .iter()
        .rposition(|m| m.role != "tool")
        .map_or(0, |i| i + 1);
    let mut answers = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(start) {
        let Some(id) = message.tool_call_id.as_deref() else {
            return Err(ApiError::invalid(format!(
                "messages[{index}].toolCallId: missing; a `tool` message answers a tool call"
            )));
        };
        let content = result_text(message, index)?;
        if let Some(call) = pending.iter().find(|call| call.id == id) {
            if !front.client.contains(&call.name) {
                return Ok(Err(format!(
                    "messages[{index}]: tool call `{id}` calls `{}`, a tool of the agent's own that waits for a person's approval, not for a result: decide it with POST /v1/sessions/{shown}/approvals/{id}",
                    call.name
                )));
            }
            if answers.iter().any(|a: &Answer| a.call_id == id) {
                return Ok(Err(format!(
                    "messages[{index}]: tool call `{id}` is answered twice in this run"
                )));
            }
            progress.answered(id);
            answers.push(Answer {
                call_id: id.to_owned(),
                content,
            });
            continue;
        }
        match stored_call(&history, id) {
            // The client's copy of a result the agent's own tool stored.
            Some(name) if !front.client.contains(name) => {}
            Some(name) => {
                return Ok(Err(format!(
                    "messages[{index}]: tool call `{id}` of the front-end tool `{name}` has its result already (a call takes one result); {}",
                    waiting(&pending)
                )));
            }
            None => {
                return Ok(Err(format!(
                    "messages[{index}]: thread `{shown}` has no tool call `{id}`; {}",
                    waiting(&pending)
                )));
            }
        }
    }
    if answers.is_empty() {
        return Ok(Err(format!(
            "messages: the run ends in `tool` messages, but none answers a front-end call the thread waits for; {}",
            waiting(&pending)
        )));
    }
    Ok(Ok(answers))
}

/// The env of a turn of `thread` that stores `answer` and resumes.
pub(crate) fn resumed(mut env: Env, thread: &str, front: &FrontEnd, answer: &Answer) -> Env {
    env.extensions.insert(SessionId(thread.to_owned()));
    front.install(&mut env);
    env.extensions.insert(answer.decision());
    env
}

/// The text of a `tool` message: its content, and the tool's failure after it.
fn result_text(message: &InputMessage, index: usize) -> Result<String, ApiError> {
    let mut text = message.text().ok_or_else(|| {
        ApiError::invalid(format!(
            "messages[{index}].content: only text parts are supported"
        ))
    })?;
    if let Some(error) = message.error.as_deref().filter(|e| !e.is_empty()) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str("the tool failed: ");
        text.push_str(error);
    }
    Ok(text)
}

/// The tool that call `id` of `history` names, if the history has such a call.
fn stored_call<'a>(history: &'a [Message], id: &str) -> Option<&'a str> {
    history
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
        .find(|call| call.id == id)
        .map(|call| call.name.as_str())
}

/// Which calls the thread waits for, for a refusal.
fn waiting(pending: &[&brute::ToolCall]) -> String {
    if pending.is_empty() {
        return "the thread waits for no tool result".to_owned();
    }
    let ids: Vec<String> = pending
        .iter()
        .map(|call| format!("`{}` ({})", call.id, call.name))
        .collect();
    format!("the thread waits for {}", ids.join(", "))
}
