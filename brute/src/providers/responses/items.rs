//! The reply read from output items, the same for a response object and for the
//! items of a stream.

use serde_json::{Map, Value};

use crate::message::{Message, ToolCall};
use crate::providers::{decode_arguments, set_reasoning_state};

/// The reply read from output items: text of `message` items, summaries of `reasoning`
/// items (the items themselves kept to go back), `function_call` items as calls.
#[derive(Debug, Default)]
pub(super) struct Items {
    text: String,
    reasoning: String,
    reasoning_items: Vec<Value>,
    calls: Vec<ToolCall>,
    /// How many items were read.
    pub(super) count: usize,
}

impl Items {
    /// Reads one output item.
    pub(super) fn add(&mut self, mut item: Value) {
        self.count += 1;
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in array(&item, "content") {
                    let text = part.get("text").or_else(|| part.get("refusal"));
                    if let Some(text) = text.and_then(Value::as_str) {
                        self.text.push_str(text);
                    }
                }
            }
            Some("function_call") => {
                let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
                let id = Some(text("call_id"))
                    .filter(|id| !id.is_empty())
                    .unwrap_or(text("id"));
                let arguments = match item.get("arguments") {
                    Some(Value::String(raw)) => decode_arguments(raw),
                    Some(Value::Null) | None => Value::Object(Map::new()),
                    Some(other) => other.clone(),
                };
                self.calls.push(ToolCall::new(id, text("name"), arguments));
            }
            Some("reasoning") => {
                let summary = array(&item, "summary");
                let texts = if summary.is_empty() {
                    array(&item, "content")
                } else {
                    summary
                };
                for text in texts.iter().filter_map(|t| t.get("text")?.as_str()) {
                    if !self.reasoning.is_empty() {
                        self.reasoning.push_str("\n\n");
                    }
                    self.reasoning.push_str(text);
                }
                // `status` describes this response, not the item that goes back.
                if let Some(fields) = item.as_object_mut() {
                    fields.remove("status");
                }
                self.reasoning_items.push(item);
            }
            _ => {}
        }
    }

    /// The message; `streamed` is the text and reasoning the deltas of a stream gave,
    /// preferred to the items' when there was any.
    pub(super) fn into_message(self, streamed: Option<(String, Option<String>)>) -> Message {
        let (streamed_text, streamed_reasoning) = streamed.unwrap_or_default();
        let text = Some(streamed_text)
            .filter(|t| !t.is_empty())
            .unwrap_or(self.text);
        let mut message = Message::tool_calls(text, self.calls);
        message.set_reasoning(
            streamed_reasoning
                .or(Some(self.reasoning))
                .filter(|r| !r.is_empty()),
        );
        if !self.reasoning_items.is_empty() {
            let state = Value::Array(self.reasoning_items).to_string();
            set_reasoning_state(&mut message, Some(state));
        }
        message
    }
}

/// The array under `key`, or none.
fn array<'a>(item: &'a Value, key: &str) -> &'a [Value] {
    item.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
