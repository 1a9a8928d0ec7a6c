//! A turn's items as AG-UI events: streamed text is an assistant text message
//! (start, content, end), each tool call of a reply is `TOOL_CALL_START` / `ARGS` /
//! `END`, a server tool's result is `TOOL_CALL_RESULT`, and the turn's end is
//! `RUN_FINISHED` (its outcome `success`, naming in `pendingToolCallIds` the
//! front-end calls left for the client, or `interrupt` for calls waiting for
//! approval) or `RUN_ERROR`.

use std::collections::{HashMap, HashSet};

use brute::stream::{TurnItem, TurnResult};
use brute::tools::ClientTools;
use brute::{Message, ToolCall};
use serde_json::json;

use super::wire::AguiEvent;
use crate::ids::unique_id;

/// What a run has shown of its turn so far.
pub(crate) struct Progress {
    thread_id: String,
    run_id: String,
    /// The id of the assistant message of the current model pass.
    message_id: String,
    /// Whether that message's `TEXT_MESSAGE_START` was sent and its end not yet.
    open: bool,
    /// The front-end tools of the run.
    client: ClientTools,
    /// The tool each call seen names, by call id.
    tools: HashMap<String, String>,
    /// The front-end calls the run's input answered: the client has their results.
    answered: HashSet<String>,
}

impl Progress {
    /// The progress of run `run_id` of thread `thread_id`, whose front-end tools are
    /// `client`.
    pub(crate) fn new(thread_id: String, run_id: String, client: ClientTools) -> Progress {
        Progress {
            thread_id,
            run_id,
            message_id: unique_id("msg"),
            open: false,
            client,
            tools: HashMap::new(),
            answered: HashSet::new(),
        }
    }

    /// Notes `call`, made before this run (a call the thread waits for).
    pub(crate) fn saw(&mut self, call: &ToolCall) {
        self.tools.insert(call.id.clone(), call.name.clone());
    }

    /// Notes that the run's input answers call `id`: its result is not sent back.
    pub(crate) fn answered(&mut self, id: &str) {
        self.answered.insert(id.to_owned());
    }

    /// The run's error event: `message`, `code`.
    pub(crate) fn error(message: String, code: &str) -> AguiEvent {
        AguiEvent::RunError {
            message,
            code: code.to_owned(),
        }
    }

    /// The thread of the run.
    pub(crate) fn thread(&self) -> &str {
        &self.thread_id
    }

    /// The run's first event.
    pub(crate) fn started(&self) -> AguiEvent {
        AguiEvent::RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
        }
    }

    /// The events of `item`.
    pub(crate) fn events(&mut self, item: &TurnItem) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        match item {
            TurnItem::ContentDelta { text } if !text.is_empty() => {
                self.open(&mut out);
                out.push(AguiEvent::TextMessageContent {
                    message_id: self.message_id.clone(),
                    delta: text.clone(),
                });
            }
            TurnItem::Message { message } => self.reply(message, &mut out),
            // The failed attempt's text stays shown (AG-UI cannot take it back); the
            // next attempt is a message of its own.
            TurnItem::Retry { .. } => self.close(&mut out),
            TurnItem::ToolResult {
                call_id, content, ..
            } if !self.answered.contains(call_id) => out.push(AguiEvent::ToolCallResult {
                message_id: unique_id("tool"),
                tool_call_id: call_id.clone(),
                content: content.clone(),
                role: "tool".to_owned(),
            }),
            TurnItem::End { result } => {
                self.close(&mut out);
                out.push(self.end(result));
            }
            _ => {}
        }
        out
    }

    fn open(&mut self, out: &mut Vec<AguiEvent>) {
        if !self.open {
            self.open = true;
            out.push(AguiEvent::TextMessageStart {
                message_id: self.message_id.clone(),
                role: "assistant".to_owned(),
            });
        }
    }

    fn close(&mut self, out: &mut Vec<AguiEvent>) {
        if self.open {
            self.open = false;
            out.push(AguiEvent::TextMessageEnd {
                message_id: self.message_id.clone(),
            });
            self.message_id = unique_id("msg");
        }
    }

    /// The complete reply of a pass: its text when it did not stream, then its calls;
    /// the next pass is a new message.
    fn reply(&mut self, message: &Message, out: &mut Vec<AguiEvent>) {
        if !self.open && !message.content.is_empty() {
            self.open(out);
            out.push(AguiEvent::TextMessageContent {
                message_id: self.message_id.clone(),
                delta: message.content.clone(),
            });
        }
        let parent = self.message_id.clone();
        self.close(out);
        for call in &message.tool_calls {
            self.tools.insert(call.id.clone(), call.name.clone());
            out.push(AguiEvent::ToolCallStart {
                tool_call_id: call.id.clone(),
                tool_call_name: call.name.clone(),
                parent_message_id: parent.clone(),
            });
            out.push(AguiEvent::ToolCallArgs {
                tool_call_id: call.id.clone(),
                delta: call.arguments.to_string(),
            });
            out.push(AguiEvent::ToolCallEnd {
                tool_call_id: call.id.clone(),
            });
        }
        self.message_id = unique_id("msg");
    }

    fn end(&self, result: &TurnResult) -> AguiEvent {
        let finished = |outcome| AguiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            outcome,
        };
        match result {
            TurnResult::Completed { .. } => finished(json!({"type": "success"})),
            TurnResult::Paused { pending } => {
                // Calls of front-end tools wait for the client's next run; the others
                // for a person's decision.
                let (front, asked): (Vec<&String>, Vec<&String>) = pending.iter().partition(|id| {
                    self.tools
                        .get(id.as_str())
                        .is_some_and(|tool| self.client.contains(tool))
                });
                if asked.is_empty() {
                    return finished(json!({"type": "success", "pendingToolCallIds": front}));
                }
                let interrupts: Vec<_> = asked
                    .iter()
                    .map(|id| {
                        json!({
                            "id": id,
                            "reason": "tool_approval",
                            "toolCallId": id,
                            "message": format!(
                                "tool call `{id}` waits for approval: POST /v1/sessions/{}/approvals/{id}",
                                self.thread_id
                            ),
                        })
                    })
                    .collect();
                finished(json!({"type": "interrupt", "interrupts": interrupts}))
            }
            TurnResult::Failed { error } => {
                let (kind, message) = crate::error::split_failure(error);
                Progress::error(message.to_owned(), kind)
            }
            TurnResult::Exited { reason } => {
                Progress::error(format!("the turn ended early: {reason}"), "turn_exited")
            }
            _ => Progress::error(
                "the turn ended without a final answer".to_owned(),
                "turn_unfinished",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brute::ToolCall;

    fn kinds(events: &[AguiEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap_or_default()["type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn a_reply_that_did_not_stream_is_one_whole_message_then_its_calls() {
        let mut progress = Progress::new("t".into(), "r".into(), ClientTools::default());
        let message = Message::tool_calls(
            "let me look",
            vec![ToolCall::new("c1", "read", json!({"path": "a"}))],
        );
        let events = progress.events(&TurnItem::Message { message });
        assert_eq!(
            kinds(&events),
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END"
            ]
        );
    }

    #[test]
    fn a_streamed_reply_is_not_repeated() {
        let mut progress = Progress::new("t".into(), "r".into(), ClientTools::default());
        let mut events = progress.events(&TurnItem::ContentDelta { text: "hi".into() });
        events.extend(progress.events(&TurnItem::Message {
            message: Message::assistant("hi"),
        }));
        assert_eq!(
            kinds(&events),
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END"
            ]
        );
    }
}
