//! Calls that wait for a person: the pause (the policy said [`Decision::Ask`]: a
//! placeholder result is stored for the call and the turn ends awaiting approval) and
//! the resume (an [`ApprovalDecision`] applied to one placeholder, in any process).
//!
//! The session holds the whole state: a paused call is a tool message with
//! `awaiting_approval` set (a valid result for every reader: "not run yet"), so
//! nothing lives in memory between the pause and the decision.

use super::approval::Decision;
use super::stages::ToolCallEnv;
use super::{DefaultToolPipeline, append_result};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::{Message, ToolCall};
use crate::stop::{ApprovalDecision, ApprovalError, ExitReason, Verdict};
use crate::stream::{pending_approvals, pending_call};
use crate::tools::context::ToolContext;
use crate::tools::set::ToolSet;

/// The content of a paused call's placeholder result.
pub(super) const AWAITING: &str = "not run yet: this tool call waits for a person's approval";

/// The reason given to the model when a person denies a call without saying why.
const DENIED: &str = "a person reviewing this call denied it";

/// A call to run now, after the policy: `Some(reason)` when it is denied.
pub(super) type Triaged = (ToolCall, Option<String>);

impl<A, T, P> DefaultToolPipeline<A, T, P>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    /// Applies the approval policy to the reply's `calls`. The calls it asks about get
    /// a placeholder result, made durable before any call runs, an
    /// [`Event::ApprovalRequired`] each, and pause the turn; the others are returned,
    /// rewritten or denied as the policy said, to run now.
    pub(super) async fn triage(
        &self,
        env: &mut Env,
        calls: Vec<ToolCall>,
    ) -> Result<Vec<Triaged>, Error> {
        let mut now = Vec::with_capacity(calls.len());
        let mut asked = Vec::new();
        for mut call in calls {
            match self.approval.decide(&call) {
                Decision::Allow => now.push((call, None)),
                Decision::Deny(reason) => now.push((call, Some(reason))),
                Decision::Rewrite(arguments) => {
                    call.arguments = arguments;
                    now.push((call, None));
                }
                Decision::Ask => asked.push(call),
            }
        }
        if asked.is_empty() {
            return Ok(now);
        }
        for call in &asked {
            let mut placeholder = Message::tool_result(call.id.clone(), AWAITING);
            placeholder.awaiting_approval = true;
            env.messages.push(placeholder);
        }
        if env.persists() {
            env.persist().await?;
        }
        for call in &asked {
            env.emit(Event::ApprovalRequired { call });
        }
        env.exit(ExitReason::AwaitingApproval {
            calls: asked.into_iter().map(|c| c.id).collect(),
        });
        Ok(now)
    }

    /// Applies `decision` to its pending call: removes the placeholder (durably, first:
    /// a crash from here on leaves the call without a result, which loading repairs
    /// as interrupted, so the call never runs twice), runs the call or denies it, and
    /// stores the result. The turn stays paused while other calls of the reply wait.
    pub(super) async fn resume(
        &self,
        env: &mut Env,
        context: &ToolContext,
        decision: ApprovalDecision,
    ) -> Result<(), Error> {
        // An env kept from the paused turn (no session) still says it is paused.
        if matches!(env.should_exit, Some(ExitReason::AwaitingApproval { .. })) {
            env.should_exit = None;
        }
        let Some((at, call)) = pending_call(&env.messages, &decision.call_id) else {
            return Err(Error::from_layer(
                "DefaultToolPipeline",
                ApprovalError::NotPending {
                    call_id: decision.call_id,
                    session: None,
                    waiting: waiting(&env.messages),
                },
            ));
        };
        let mut call = call.clone();
        env.messages.edit(|messages| {
            messages.remove(at);
        });
        if env.persists() {
            env.persist().await?;
        }
        let denied = match decision.verdict {
            Verdict::Approve => None,
            Verdict::Edit { arguments } => {
                call.arguments = arguments;
                None
            }
            Verdict::Deny { reason } => Some(reason.unwrap_or_else(|| DENIED.to_string())),
        };
        env.emit(Event::ToolCallStart { call: &call });
        let result = self.run_one(context, call.clone(), denied).await;
        append_result(env, &call, result).await?;
        let still = waiting(&env.messages);
        if !still.is_empty() {
            env.exit(ExitReason::AwaitingApproval { calls: still });
        }
        Ok(())
    }
}

/// The ids of the calls waiting for approval at the end of `messages`, in call order.
fn waiting(messages: &[Message]) -> Vec<String> {
    pending_approvals(messages)
        .into_iter()
        .map(|call| call.id.clone())
        .collect()
}
