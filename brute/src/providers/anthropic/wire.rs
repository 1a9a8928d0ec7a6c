//! The Messages API's JSON shapes: the request (alternating turns of content blocks),
//! the response, and the events of a stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{Message, Part, Role, Source};
use crate::providers::Extra;
use crate::usage::Usage;

#[derive(Serialize)]
pub(super) struct Body<'a, P> {
    pub(super) model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<System<'a>>,
    pub(super) messages: &'a [Turn<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    /// `max_tokens`, sampling and thinking: the codec's parameters, flattened in (the
    /// wire shapes do not name the codec's types).
    #[serde(flatten)]
    pub(super) params: &'a P,
    #[serde(flatten)]
    pub(super) extra: Extra<'a>,
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint.
#[derive(Serialize)]
pub(super) struct CacheControl {
    r#type: &'static str,
}

pub(super) const EPHEMERAL: CacheControl = CacheControl {
    r#type: "ephemeral",
};

/// The system prompt: a string, or one text block with a cache breakpoint.
pub(super) struct System<'a> {
    pub(super) text: &'a str,
    pub(super) cache: bool,
}

impl Serialize for System<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.cache {
            [Cached {
                block: &OutBlock::Text { text: self.text },
                cache_control: EPHEMERAL,
            }]
            .serialize(serializer)
        } else {
            serializer.serialize_str(self.text)
        }
    }
}

/// `tool_choice`: `{"type": "tool", "name"}` or `{"type": "any"}`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ToolChoice<'a> {
    Tool { name: &'a str },
    Any,
}

/// A block with a cache breakpoint after it.
#[derive(Serialize)]
struct Cached<'a> {
    #[serde(flatten)]
    block: &'a OutBlock<'a>,
    cache_control: CacheControl,
}

pub(super) struct Turn<'a> {
    pub(super) role: &'static str,
    pub(super) content: Vec<OutBlock<'a>>,
    /// Whether the turn's last block that can carry one gets a cache breakpoint.
    pub(super) cache: bool,
}

impl Serialize for Turn<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut turn = serializer.serialize_struct("Turn", 2)?;
        turn.serialize_field("role", self.role)?;
        match self.content.as_slice() {
            _ if self.cache => turn.serialize_field("content", &CachedBlocks(&self.content))?,
            // A turn that is one text is sent as a string, as in the API's examples.
            [OutBlock::Text { text }] => turn.serialize_field("content", text)?,
            blocks => turn.serialize_field("content", blocks)?,
        }
        turn.end()
    }
}

/// Blocks whose last cacheable one (not a thinking block) carries a breakpoint.
struct CachedBlocks<'a>(&'a [OutBlock<'a>]);

impl Serialize for CachedBlocks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mark = self
            .0
            .iter()
            .rposition(|b| !matches!(b, OutBlock::Thinking { .. }));
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (index, block) in self.0.iter().enumerate() {
            if Some(index) == mark {
                seq.serialize_element(&Cached {
                    block,
                    cache_control: EPHEMERAL,
                })?;
            } else {
                seq.serialize_element(block)?;
            }
        }
        seq.end()
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
        #[serde(serialize_with = "object_or_empty")]
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
    },
    Image {
        source: MediaSource<'a>,
    },
    Document {
        source: MediaSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
}

impl<'a> OutBlock<'a> {
    fn part(part: &'a Part) -> Self {
        match part {
            Part::Image(source) => OutBlock::Image {
                source: MediaSource(source),
            },
            Part::Document { source, title } => OutBlock::Document {
                source: MediaSource(source),
                title: title.as_deref(),
            },
        }
    }
}

/// A tool result's content: its text, or its parts then its text.
pub(super) struct ResultContent<'a>(&'a Message);

impl Serialize for ResultContent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        if message.parts().is_empty() {
            return serializer.serialize_str(&message.content);
        }
        let mut blocks: Vec<OutBlock<'_>> = message.parts().iter().map(OutBlock::part).collect();
        if !message.content.is_empty() {
            blocks.push(OutBlock::Text {
                text: &message.content,
            });
        }
        blocks.serialize(serializer)
    }
}

/// `{"type": "url", "url"}` or `{"type": "base64", "media_type", "data"}`.
pub(super) struct MediaSource<'a>(&'a Source);

impl Serialize for MediaSource<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Source::Url(url) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "url")?;
                map.serialize_entry("url", url)?;
                map.end()
            }
            Source::Data(data) => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("type", "base64")?;
                map.serialize_entry("media_type", data.media_type())?;
                map.serialize_entry("data", data.base64())?;
                map.end()
            }
        }
    }
}

/// The blocks of one message, in the order the API wants them: a user message's
/// images and documents before its text.
pub(super) fn blocks(message: &Message) -> Vec<OutBlock<'_>> {
    let mut blocks = Vec::new();
    match message.role {
        Role::Tool => blocks.push(OutBlock::ToolResult {
            tool_use_id: message.tool_call_id.as_deref().unwrap_or(""),
            content: ResultContent(message),
        }),
        Role::Assistant => {
            // Only signed thinking can go back; reasoning from other providers cannot.
            if let (Some(thinking), Some(signature)) =
                (message.reasoning(), message.reasoning_signature())
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
                    input: &call.arguments,
                });
            }
        }
        Role::User | Role::System => {
            blocks.extend(message.parts().iter().map(OutBlock::part));
            if !message.content.is_empty() {
                blocks.push(OutBlock::Text {
                    text: &message.content,
                });
            }
        }
    }
    blocks
}

/// A `tool_use` input: the arguments when they are an object, else `{}`. Arguments
/// that are not an object cannot be an input; the call is kept (its result follows it)
/// with an empty one.
fn object_or_empty<S: serde::Serializer>(input: &&Value, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    if input.is_object() {
        input.serialize(serializer)
    } else {
        serializer.serialize_map(Some(0))?.end()
    }
}

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
        let read = usage.cache_read_input_tokens.unwrap_or(0);
        let written = usage.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: usage
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(written),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cached_tokens: read,
            cache_write_tokens: written,
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
