//! Messages: what the conversation is made of, and how it is written to a session file.
//!
//! The serde form is the session format: one message per JSON line, and loading is
//! its exact inverse (a lossless round trip).
//!
//! ```
//! use brute::{Message, Role};
//!
//! let line = r#"{"role":"assistant","content":"","tool_calls":[{"id":"tc1","name":"shell","arguments":{"command":"ls"}}]}"#;
//! let message: Message = serde_json::from_str(line)?;
//! assert_eq!(message.role, Role::Assistant);
//! assert_eq!(message.tool_calls[0].name, "shell");
//! assert_eq!(serde_json::to_string(&message)?, line);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # Images and documents
//!
//! A message carries images and documents in [`Message::parts`], beside its text in
//! [`Message::content`] (see [`Part`]). Providers send the parts before the text, the
//! order Anthropic recommends (the picture, then the question about it); to interleave
//! text and pictures, send several user messages in a row, which both providers accept
//! as one turn. A message without parts has the same JSON line as before parts existed.
//!
//! ```
//! use brute::{Message, message::Part};
//!
//! let message = Message::user("Summarise this report.").with_part(Part::pdf(b"%PDF-1.7 ..."));
//! let line = serde_json::to_string(&message)?;
//! assert!(line.starts_with(r#"{"role":"user","content":"Summarise this report.","parts":[{"type":"document","media_type":"application/pdf","data":"#));
//! assert_eq!(serde_json::from_str::<Message>(&line)?, message);
//! # Ok::<(), serde_json::Error>(())
//! ```

pub(crate) mod chat;
mod part;

pub(crate) use chat::{Message, Role, ToolCall};
pub use part::{Data, Part, PartError, Source};
