//! The Messages API's JSON shapes: the request (alternating turns of content blocks),
//! the response, and the events of a stream.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::codec::Params;
use crate::message::{Message, Role};
use crate::usage::Usage;

#[derive(Serialize)]
pub(super) struct Request<'a> {
    pub(super) model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<&'a str>,
    pub(super) messages: &'a [Turn<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(flatten)]
    pub(super) params: &'a Params,
}

pub(super) struct Turn<'a> {
    pub(super) role: &'static str,
    pub(super) content: Vec<OutBlock<'a>>,
}

impl Serialize for Turn<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut turn = serializer.serialize_struct("Turn", 2)?;
        turn.serialize_field("role", self.role)?;
        match self.content.as_slice() {
            // A turn that is one text is sent as a string, as in the API's examples.
            [OutBlock::Text { text }] => turn.serialize_field("content", text)?,
            blocks => turn.serialize_field("content", blocks)?,
        }
        turn.end()
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum OutBlock<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// The blocks of one message, in the order the API wants them.
pub(super) fn blocks(message: &Message) -> Vec<OutBlock<'_>> {
    let mut blocks = Vec::new();
    match message.role {
        Role::Tool => blocks.push(OutBlock::ToolResult {
            tool_use_id: message.tool_call_id.as_deref().unwrap_or(""),
            content: &message.content,
        }),
        Role::Assistant => {
            // Only signed thinking can go back; reasoning from other providers cannot.
            if let (Some(thinking), Some(signature)) =
                (&message.reasoning, &message.reasoning_signature)
            {
                blocks.push(OutBlock::Thinking {
                    thinking,
                    signature,
                });
            }
            if !message.content.is_empty() {
                blocks.push(OutBlock::Text {
                    text: &message.content,
                });
            }
            for call in &message.tool_calls {
                blocks.push(OutBlock::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    // Arguments that are not an object cannot be a tool_use input;
                    // the call is kept (its result follows it) with an empty input.
                    input: if call.arguments.is_object() {
                        &call.arguments
                    } else {
                        &EMPTY_OBJECT
                    },
                });
            }
        }
        Role::User | Role::System => {
            if !message.content.is_empty() {
                blocks.push(OutBlock::Text {
                    text: &message.content,
                });
            }
        }
    }
    blocks
}

static EMPTY_OBJECT: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::Object(Map::new()));

#[derive(Deserialize)]
pub(super) struct Response {
    pub(super) content: Option<Vec<Block>>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// `input_tokens` counts every prompt token, cached or not, as OpenAI's does.
    fn from(usage: WireUsage) -> Self {
        let cached = usage.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: usage.input_tokens.unwrap_or(0)
                + cached
                + usage.cache_creation_input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cached_tokens: cached,
        }
    }
}

impl std::fmt::Debug for WireUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Usage::from(*self).fmt(f)
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop,
    MessageDelta {
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
pub(super) struct StartMessage {
    pub(super) usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}
