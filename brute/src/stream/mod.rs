//! Turns as a stream, and tool calls that wait for a person.
//!
//! [`Agent::stream`](crate::Agent::stream) runs a turn as a [`TurnStream`] of owned,
//! serde-serializable [`TurnItem`]s (deltas, the model's replies, tool calls and
//! results, retries, compaction, approval required, and the end), for a server to send
//! as Server-Sent Events or a terminal to print as they come. Polling the stream runs
//! the turn; dropping it cancels the turn, and `SessionLog` leaves the session whole
//! (see its "dropped turn" guarantee).
//!
//! # Approval that survives restarts
//!
//! A tool call whose approval policy says [`Decision::Ask`](crate::tools::Decision::Ask)
//! pauses the turn:
//!
//! 1. the call gets a placeholder result marked `awaiting_approval` in the session
//!    (made durable before any call of the reply runs; the other calls run at once),
//!    the stream yields [`TurnItem::ApprovalRequired`], and the turn ends
//!    [`TurnResult::Paused`] ([`ExitReason::AwaitingApproval`](crate::ExitReason::AwaitingApproval));
//! 2. later, in this process or another one with the same store,
//!    [`Agent::decide`](crate::Agent::decide) takes a [`Verdict`] on one call: the
//!    placeholder is removed (durably, first: a crash from there on leaves the call
//!    cancelled, never run twice), the call runs (approved or edited) or is answered
//!    with the denial, and the turn goes on once no call of the reply waits;
//! 3. a turn with a new prompt instead answers the waiting calls with
//!    [`ABANDONED_APPROVAL`](crate::session::ABANDONED_APPROVAL).
//!
//! Nothing of a paused turn lives in memory, so any worker on the session's store can
//! take the decision. The session format stays compatible: the marker is absent from
//! the JSON of every other message, and a reader that ignores it sees a valid history.
//!
//! ```
//! use brute::session::{JsonlStore, SessionId};
//! use brute::stream::{TurnItem, TurnResult, Verdict};
//! use brute::tools::{Approval, DefaultToolPipeline, Tools};
//! use brute::{Message, Role, ToolCall, brute_agent, middleware::{Loop, SessionLog}, providers::ScriptedModel};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let (sessions, root) = (dir.path().join("sessions"), dir.path().to_path_buf());
//! let model = || ScriptedModel::from_fn(|env| match env.messages.last() {
//!     Some(m) if m.role == Role::Tool => Message::assistant("written"),
//!     _ => Message::tool_calls("", vec![ToolCall::new(
//!         "c1", "write", serde_json::json!({"file_path": "notes.txt", "content": "hi"}),
//!     )]),
//! });
//! let agent = || brute_agent! {
//!     use SessionLog { store: JsonlStore::new(&sessions) };
//!     use Loop::ToolResult;
//!     use DefaultToolPipeline { tools: Tools::ALL, root: root.clone(), approval: Approval::ask(["write"]) };
//!     run model();
//! };
//! let session = |agent: &brute::Agent<_>| {
//!     let mut env = agent.env();
//!     env.extensions.insert(SessionId::from("alice"));
//!     env
//! };
//!
//! // The turn pauses: nothing is written yet.
//! let first = agent();
//! let mut env = session(&first);
//! env.messages.push(Message::user("Write hi to notes.txt"));
//! let mut stream = first.stream(env);
//! let mut last = None;
//! while let Some(item) = stream.next_item().await {
//!     last = Some(item);
//! }
//! assert_eq!(last, Some(TurnItem::End { result: TurnResult::Paused { pending: vec!["c1".into()] } }));
//! assert!(!root.join("notes.txt").exists());
//! drop(stream);
//! drop(first);
//!
//! // Another agent (another process, after a restart) approves: the call runs once.
//! let second = agent();
//! let outcome = second.decide(session(&second), "c1", Verdict::Approve).await?;
//! assert_eq!(outcome.text(), Some("written"));
//! assert_eq!(std::fs::read_to_string(root.join("notes.txt"))?, "hi");
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```

mod item;
pub(crate) mod pending;
mod turn_stream;

pub use crate::stop::{ApprovalDecision, ApprovalError, Verdict};
pub use item::{TurnItem, TurnResult};
pub use pending::pending_approvals;
#[cfg(feature = "tools")]
pub(crate) use pending::pending_call;
pub use turn_stream::TurnStream;
