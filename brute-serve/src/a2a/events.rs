//! A turn's items as A2A stream events: text deltas append to the `answer` artifact,
//! tool calls and results are `WORKING` status updates, and the end is the final
//! status (`COMPLETED`, `INPUT_REQUIRED` for calls waiting for approval, `FAILED`,
//! `CANCELED`).

use brute::ToolCall;
use brute::stream::{TurnItem, TurnResult};
use serde_json::json;

use super::run::ended_why;
use super::tasks::{CANCELED, TaskRef, agent_message, answer, approval_message};
use super::wire::{ArtifactUpdate, Part, StatusUpdate, StreamResponse, TaskState, TaskStatus};

/// What a stream has shown of its turn so far.
pub(crate) struct Progress {
    task: TaskRef,
    /// Whether the answer artifact has text of this model pass.
    streaming: bool,
    /// The last text delta, not sent yet: it goes out once the next one comes (then it
    /// was not the last chunk) or at the end (with `lastChunk: true` when the turn
    /// completed with it).
    held: Option<String>,
    /// The calls that wait for approval.
    waiting: Vec<ToolCall>,
    steps: usize,
}

impl Progress {
    /// The progress of the turn of `task`.
    pub(crate) fn new(task: TaskRef) -> Progress {
        Progress {
            task,
            streaming: false,
            held: None,
            waiting: Vec::new(),
            steps: 0,
        }
    }

    fn status(&mut self, state: TaskState, parts: Vec<Part>) -> StreamResponse {
        self.steps += 1;
        let message = (!parts.is_empty())
            .then(|| agent_message(&self.task, &format!("step-{}", self.steps), parts));
        StreamResponse::StatusUpdate(StatusUpdate {
            task_id: self.task.id(),
            context_id: self.task.session.clone(),
            status: TaskStatus { state, message },
        })
    }

    fn chunk(&mut self, text: &str, last: bool) -> StreamResponse {
        let append = self.streaming;
        self.streaming = !last;
        StreamResponse::ArtifactUpdate(ArtifactUpdate {
            task_id: self.task.id(),
            context_id: self.task.session.clone(),
            artifact: answer(&self.task, text),
            append,
            last_chunk: last,
        })
    }

    /// The held delta as a chunk that is not the last, if there is one.
    fn flush(&mut self) -> Vec<StreamResponse> {
        match self.held.take() {
            Some(text) => vec![self.chunk(&text, false)],
            None => Vec::new(),
        }
    }

    /// Counts `calls` as waiting already (a resumed turn that may pause again on them).
    pub(crate) fn waiting(mut self, calls: Vec<ToolCall>) -> Progress {
        self.waiting = calls;
        self
    }

    /// The events of `item`.
    pub(crate) fn events(&mut self, item: &TurnItem) -> Vec<StreamResponse> {
        match item {
            TurnItem::ContentDelta { text } => {
                let events = self.flush();
                self.held = Some(text.clone());
                events
            }
            // A reply with tool calls is not the answer: the next pass's text replaces
            // what it streamed, as does the next attempt after a failed one.
            TurnItem::Message { message } if !message.tool_calls.is_empty() => {
                let events = self.flush();
                self.streaming = false;
                events
            }
            TurnItem::Retry { .. } => {
                let events = self.flush();
                self.streaming = false;
                events
            }
            TurnItem::ToolCallStart { call } => vec![self.status(
                TaskState::Working,
                vec![
                    Part::text(format!("calling tool `{}`", call.name)),
                    Part::data(
                        json!({"callId": call.id, "name": call.name, "arguments": call.arguments}),
                    ),
                ],
            )],
            TurnItem::ToolResult {
                call_id,
                name,
                is_error,
                ..
            } => vec![self.status(
                TaskState::Working,
                vec![Part::data(
                    json!({"callId": call_id, "name": name, "isError": is_error}),
                )],
            )],
            TurnItem::ApprovalRequired { call } => {
                self.waiting.push(call.clone());
                Vec::new()
            }
            TurnItem::End { result } => self.end(result),
            _ => Vec::new(),
        }
    }

    fn end(&mut self, result: &TurnResult) -> Vec<StreamResponse> {
        if !matches!(result, TurnResult::Completed { .. }) {
            // The text of a turn that did not complete is no finished answer.
            let mut events = self.flush();
            events.extend(self.ended(result));
            return events;
        }
        self.ended(result)
    }

    fn ended(&mut self, result: &TurnResult) -> Vec<StreamResponse> {
        match result {
            TurnResult::Completed { text } => {
                let text = text.clone().unwrap_or_default();
                let mut events = Vec::new();
                match self.held.take() {
                    // The answer streamed: its last delta is the last chunk.
                    Some(last) => events.push(self.chunk(&last, true)),
                    None if !self.streaming => events.push(self.chunk(&text, true)),
                    // Streamed, its last chunk sent (a held delta always comes last
                    // while a pass streams, so this is not reached).
                    None => {}
                }
                events.push(self.status(TaskState::Completed, vec![Part::text(text)]));
                events
            }
            TurnResult::Paused { pending } => {
                let calls: Vec<&ToolCall> = self
                    .waiting
                    .iter()
                    .filter(|call| pending.contains(&call.id))
                    .collect();
                let message = approval_message(&self.task, &calls);
                vec![StreamResponse::StatusUpdate(StatusUpdate {
                    task_id: self.task.id(),
                    context_id: self.task.session.clone(),
                    status: TaskStatus {
                        state: TaskState::InputRequired,
                        message: Some(message),
                    },
                })]
            }
            TurnResult::Exited { reason } if reason == CANCELED => {
                vec![self.status(TaskState::Canceled, vec![Part::text(CANCELED)])]
            }
            other => vec![self.status(TaskState::Failed, ended_why(other))],
        }
    }
}
