//! The message itself: [`Message`], who said it ([`Role`]) and the tool calls it asks
//! for ([`ToolCall`]), with its serde form (a session file's line). Public at the crate
//! root (`brute::Message`), their one path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::part::Part;

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model; `SystemPrompt` adds it each turn, so sessions skip it.
    System,
    /// The person (or program) driving the agent.
    User,
    /// The model: text, reasoning and tool calls.
    Assistant,
    /// The result of one tool call, tied to it by `tool_call_id`.
    Tool,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        })
    }
}

/// A tool call the model asked for: which tool, with which JSON arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier chosen by the model; the tool result repeats it in `tool_call_id`.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Arguments as the model wrote them (normally a JSON object).
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call with the given id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// One message of a conversation.
///
/// Fields that are empty are left out of the JSON form (`parts`, `tool_calls`,
/// `tool_call_id`, `reasoning`, `awaiting_approval`, `idempotency_keys`, `agent`); `content` is always written, and defaults to `""` when
/// a line lacks it.
///
/// The text stays a `String` in `content`, and images and documents live beside it in
/// [`parts`](Message::parts), rather than `content` becoming a list of parts: every reader of the text
/// (middleware, compaction, tools, tests, user code) keeps working unchanged, a
/// text-only message costs nothing more, and its session line is byte for byte the line
/// brute wrote before parts existed.
///
/// What most messages lack (parts, reasoning, its signature, the approval marker) is
/// held out of line behind one pointer and reached through methods, so the common
/// message stays small to move and to store in the transcript; new rare fields can
/// join them without a breaking change. Build a message with its constructors
/// ([`Message::user`], [`Message::tool_result`], ...) and the `with_*` methods.
///
/// ```
/// use brute::Message;
///
/// let answer = Message::assistant("It is 4 degrees.").with_reasoning("The tool said 4.");
/// assert_eq!(answer.reasoning(), Some("The tool said 4."));
/// assert!(answer.parts().is_empty() && !answer.awaiting_approval());
/// ```
#[derive(Clone, Deserialize)]
#[serde(from = "MessageIn")]
#[non_exhaustive]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Tool calls of an assistant message, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// On a tool result: the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// The rare fields; `None` while all of them are empty.
    rare: Option<Box<Rare>>,
}

/// What few messages carry, out of line so that a common message stays small.
#[derive(Clone, Default, PartialEq)]
struct Rare {
    parts: Vec<Part>,
    reasoning: Option<String>,
    reasoning_signature: Option<String>,
    awaiting_approval: bool,
    idempotency_keys: Vec<String>,
    agent: Option<String>,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.parts.is_empty()
            && self.reasoning.is_none()
            && self.reasoning_signature.is_none()
            && !self.awaiting_approval
            && self.idempotency_keys.is_empty()
            && self.agent.is_none()
    }
}

/// The JSON form of a message, written: the field order is the session format's.
#[derive(Serialize)]
struct MessageOut<'a> {
    role: Role,
    content: &'a str,
    #[serde(skip_serializing_if = "<[Part]>::is_empty")]
    parts: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_signature: Option<&'a str>,
    #[serde(skip_serializing_if = "<[ToolCall]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    awaiting_approval: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    idempotency_keys: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
}

/// The JSON form of a message, read: every field but `role` may be absent.
#[derive(Deserialize)]
#[serde(rename = "Message")]
struct MessageIn {
    role: Role,
    #[serde(default)]
    content: String,
    #[serde(default)]
    parts: Vec<Part>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    reasoning_signature: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    awaiting_approval: bool,
    #[serde(default)]
    idempotency_keys: Vec<String>,
    #[serde(default)]
    agent: Option<String>,
}

impl From<MessageIn> for Message {
    fn from(form: MessageIn) -> Self {
        let rare = Rare {
            parts: form.parts,
            reasoning: form.reasoning,
            reasoning_signature: form.reasoning_signature,
            awaiting_approval: form.awaiting_approval,
            idempotency_keys: form.idempotency_keys,
            agent: form.agent,
        };
        Message {
            role: form.role,
            content: form.content,
            tool_calls: form.tool_calls,
            tool_call_id: form.tool_call_id,
            rare: (!rare.is_empty()).then(|| Box::new(rare)),
        }
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageOut {
            role: self.role,
            content: &self.content,
            parts: self.parts(),
            reasoning: self.reasoning(),
            reasoning_signature: self.reasoning_signature(),
            tool_calls: &self.tool_calls,
            tool_call_id: self.tool_call_id.as_deref(),
            awaiting_approval: self.awaiting_approval(),
            idempotency_keys: self.idempotency_keys(),
            agent: self.agent(),
        }
        .serialize(serializer)
    }
}

/// Equal when every field is, however the rare ones are held.
impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.role == other.role
            && self.content == other.content
            && self.tool_calls == other.tool_calls
            && self.tool_call_id == other.tool_call_id
            && self.parts() == other.parts()
            && self.reasoning() == other.reasoning()
            && self.reasoning_signature() == other.reasoning_signature()
            && self.awaiting_approval() == other.awaiting_approval()
            && self.idempotency_keys() == other.idempotency_keys()
            && self.agent() == other.agent()
    }
}

impl std::fmt::Debug for Message {
    /// Every field, in the order of the JSON form.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("role", &self.role)
            .field("content", &self.content)
            .field("parts", &self.parts())
            .field("reasoning", &self.reasoning())
            .field("reasoning_signature", &self.reasoning_signature())
            .field("tool_calls", &self.tool_calls)
            .field("tool_call_id", &self.tool_call_id)
            .field("awaiting_approval", &self.awaiting_approval())
            .field("idempotency_keys", &self.idempotency_keys())
            .field("agent", &self.agent())
            .finish()
    }
}

impl Message {
    /// A message with the given role and text, and nothing else.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            rare: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools.
    pub fn tool_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result of the tool call with id `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// The same message with `part` added after its other parts.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts_mut().push(part);
        self
    }

    /// Images and documents, sent before the text (see [`Part`]). Absent from the JSON
    /// form when empty.
    pub fn parts(&self) -> &[Part] {
        self.rare.as_deref().map_or(&[], |rare| &rare.parts)
    }

    /// The parts, to add, change or remove some.
    pub fn parts_mut(&mut self) -> &mut Vec<Part> {
        &mut self.rare_mut().parts
    }

    /// The model's visible reasoning, for providers that return it.
    pub fn reasoning(&self) -> Option<&str> {
        self.rare.as_deref()?.reasoning.as_deref()
    }

    /// The reasoning, to change it in place (`None` when there is none).
    pub fn reasoning_mut(&mut self) -> Option<&mut String> {
        self.rare.as_deref_mut()?.reasoning.as_mut()
    }

    /// Sets or removes the reasoning.
    pub fn set_reasoning(&mut self, reasoning: Option<String>) {
        self.set_rare(reasoning, |rare| &mut rare.reasoning);
    }

    /// The same message with `reasoning`.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.set_reasoning(Some(reasoning.into()));
        self
    }

    /// What a provider needs to accept the reasoning back on a later call: the
    /// signature of an Anthropic thinking block. Absent from the JSON form when `None`,
    /// so sessions without it are unchanged.
    pub fn reasoning_signature(&self) -> Option<&str> {
        self.rare.as_deref()?.reasoning_signature.as_deref()
    }

    /// Sets or removes the reasoning's signature.
    pub fn set_reasoning_signature(&mut self, signature: Option<String>) {
        self.set_rare(signature, |rare| &mut rare.reasoning_signature);
    }

    /// The same message with the reasoning's `signature`.
    pub fn with_reasoning_signature(mut self, signature: impl Into<String>) -> Self {
        self.set_reasoning_signature(Some(signature.into()));
        self
    }

    /// On a tool result: not a result yet. The call waits for a person's decision
    /// (the approval policy asked, see [`brute::stream`](crate::stream)), and the
    /// content says so. Absent from the JSON form when `false`, so sessions without
    /// paused calls are unchanged.
    pub fn awaiting_approval(&self) -> bool {
        self.rare
            .as_deref()
            .is_some_and(|rare| rare.awaiting_approval)
    }

    /// Marks the message as waiting for approval, or clears the mark.
    pub fn set_awaiting_approval(&mut self, awaiting: bool) {
        if awaiting {
            self.rare_mut().awaiting_approval = true;
        } else if let Some(rare) = self.rare.as_deref_mut() {
            rare.awaiting_approval = false;
            self.drop_empty_rare();
        }
    }

    /// The idempotency keys of the requests that wrote this message (a server's turn
    /// request on its prompt, a decision on the reply it decided), so that a retried
    /// request finds what its first attempt stored. Stored with the message, so every
    /// server on the same store sees them; absent from the JSON form when empty.
    pub fn idempotency_keys(&self) -> &[String] {
        self.rare
            .as_deref()
            .map_or(&[], |rare| &rare.idempotency_keys)
    }

    /// Whether the message carries the idempotency key `key`.
    pub fn has_idempotency_key(&self, key: &str) -> bool {
        self.idempotency_keys().iter().any(|k| k == key)
    }

    /// Adds the idempotency key `key` (once: a key it carries is not added again).
    pub fn add_idempotency_key(&mut self, key: impl Into<String>) {
        let key = key.into();
        if !self.has_idempotency_key(&key) {
            self.rare_mut().idempotency_keys.push(key);
        }
    }

    /// The same message with the idempotency key `key` added.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.add_idempotency_key(key);
        self
    }

    /// The name of the agent that wrote this assistant message, when it is not the
    /// agent the conversation is served by: a [`Handoffs`](crate::middleware::Handoffs)
    /// target's answers carry its name, so the session records who answered. Absent
    /// from the JSON form when `None`.
    pub fn agent(&self) -> Option<&str> {
        self.rare.as_deref().and_then(|rare| rare.agent.as_deref())
    }

    /// Names the agent that wrote the message, or clears the name.
    pub fn set_agent(&mut self, agent: Option<String>) {
        self.set_rare(agent, |rare| &mut rare.agent);
    }

    /// The same message, written by the agent `agent`.
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.set_agent(Some(agent.into()));
        self
    }

    /// The rare fields, made when the message has none yet.
    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Sets one optional rare field; clearing one allocates nothing.
    fn set_rare(&mut self, value: Option<String>, field: fn(&mut Rare) -> &mut Option<String>) {
        match value {
            Some(value) => *field(self.rare_mut()) = Some(value),
            None => {
                if let Some(rare) = self.rare.as_deref_mut() {
                    *field(rare) = None;
                    self.drop_empty_rare();
                }
            }
        }
    }

    fn drop_empty_rare(&mut self) {
        if self.rare.as_deref().is_some_and(Rare::is_empty) {
            self.rare = None;
        }
    }

    /// Whether this is an assistant message asking for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.role == Role::Assistant && !self.tool_calls.is_empty()
    }
}
