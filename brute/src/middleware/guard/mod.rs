//! Guardrails: [`Guard`], the check a [`Guardrail`](crate::middleware::Guardrail)
//! layer asks about a turn's prompt, tool results, reply and tool calls, and
//! [`PiiGuard`], the built-in guard for personal data.
//!
//! A guard answers each question with a [`Check`]: pass, rewrite, or block with a
//! reason. A blocked turn ends with [`ExitReason::Blocked`](crate::ExitReason::Blocked),
//! and the message that says so is stored in the session ([`blocked_reason`] reads it
//! back).

mod check;
pub(super) mod layer;
mod pii;
mod scan;

pub use check::{Check, DeltaFilter, Guard, Stage, blocked_reason};
pub use pii::{Action, Pii, PiiGuard};
