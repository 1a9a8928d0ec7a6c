//! Calls that wait for a person: the pause (the policy said [`Decision::Ask`]: a
//! placeholder result is stored for the call and the turn ends awaiting approval) and
//! the resume (an [`ApprovalDecision`] applied to one placeholder, in any process).
//! A call of a tool the client runs ([`ClientTools`]) pauses the same way, and its
//! resume is the client's result ([`Verdict::Answer`]), stored without running
//! anything; a turn whose client tools take a name of the pipeline's own is refused.
//!
//! The session holds the whole state: a paused call is a tool message with
//! `awaiting_approval` set (a valid result for every reader: "not run yet"), so
//! nothing lives in memory between the pause and the decision.

use super::approval::{ApprovalPolicy, Decision};
use super::stages::ToolCallEnv;
use super::{DefaultToolPipeline, append_result};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::{Message, ToolCall};
use crate::stop::{ApprovalDecision, ApprovalError, ExitReason, Verdict};
use crate::stream::{pending_approvals, pending_call};
use crate::tool::ToolSpec;
use crate::tools::client::ClientTools;
use crate::tools::context::ToolContext;
use crate::tools::secrets::Secrets;
use crate::tools::set::ToolSet;
use crate::tools::tool::ToolOutput;
use crate::tools::truncate::{Truncation, truncate_owned};

/// The content of a paused call's placeholder result.
pub(super) const AWAITING: &str = "not run yet: this tool call waits for a person's approval";

/// The reason given to the model when a person denies a call without saying why.
const DENIED: &str = "a person reviewing this call denied it";

impl<A, T, P, Ap> DefaultToolPipeline<A, T, P, Ap>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    /// Pauses for the calls of the reply at `reply` whose policy `decided` is
    /// [`Decision::Ask`]: each gets a placeholder result, made durable before any call
    /// runs, and an [`Event::ApprovalRequired`]; the turn ends awaiting approval. The
    /// other calls run as decided.
    pub(super) async fn pause(
        &self,
        env: &mut Env,
        reply: usize,
        decided: &[Decision],
    ) -> Result<(), Error> {
        let asked: Vec<ToolCall> = env.messages[reply]
            .tool_calls
            .iter()
            .zip(decided)
            .filter(|(_, decided)| **decided == Decision::Ask)
            .map(|(call, _)| call.clone())
            .collect();
        if asked.is_empty() {
            return Ok(());
        }
        for call in &asked {
            let mut placeholder = Message::tool_result(call.id.clone(), AWAITING);
            placeholder.set_awaiting_approval(true);
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
        Ok(())
    }

    /// Applies `decision` to its pending call: removes the placeholder (durably, first:
    /// a crash from here on leaves the call without a result, which loading repairs
    /// as interrupted, so the call never runs twice), runs the call or denies it, and
    /// stores the result. The turn stays paused while other calls of the reply wait.
    pub(super) async fn resume(
        &self,
        env: &mut Env,
        context: &ToolContext,
        model: &Secrets,
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
        // Only a call the client runs takes its result from the client.
        let client = env.extensions.get::<ClientTools>();
        if matches!(decision.verdict, Verdict::Answer { .. })
            && !client.is_some_and(|c| c.contains(&call.name))
        {
            return Err(Error::from_layer(
                "DefaultToolPipeline",
                ApprovalError::NotClientTool {
                    call_id: decision.call_id,
                    tool: call.name.clone(),
                },
            ));
        }
        let id = call.id.clone();
        env.messages.edit(|messages| {
            messages.remove(at);
        });
        if env.persists() {
            env.persist().await?;
        }
        // The decision to run the call by, or (`Err`) what the client's tool returned.
        let decided = match decision.verdict {
            Verdict::Approve => Ok(Decision::Allow),
            Verdict::Edit { arguments } => Ok(Decision::Rewrite(arguments)),
            Verdict::Deny { reason } => {
                Ok(Decision::Deny(reason.unwrap_or_else(|| DENIED.to_string())))
            }
            Verdict::Answer { content } => Err(content),
        };
        // The reply that holds the call, and the call's place in it.
        let Some((reply, index)) = env.messages.iter().enumerate().rev().find_map(|(i, m)| {
            let index = m.tool_calls.iter().position(|c| c.id == id)?;
            Some((i, index))
        }) else {
            return Err(Error::layer(
                "DefaultToolPipeline",
                format!("the reply holding call `{id}` is not in the conversation"),
            ));
        };
        let result = match decided {
            Ok(decided) => {
                let call = &env.messages[reply].tool_calls[index];
                env.emit(Event::ToolCallStart { call });
                self.run_one(context, model, call, decided).await
            }
            // Not run here: redacted and cut as any result the pipeline stores.
            Err(content) => {
                let text = model.redact_owned(context.secrets().redact_owned(content));
                let cut = truncate_owned(text, Truncation::Head, false, context.output_dir());
                (ToolOutput::text(cut), false)
            }
        };
        append_result(env, reply, index, result).await?;
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

/// The decision on `call`: a pause for a tool that runs on the client (named by the
/// env's [`ClientTools`]), the approval policy's otherwise.
#[inline]
pub(super) fn decide<Ap: ApprovalPolicy>(
    approval: &Ap,
    client: Option<&ClientTools>,
    call: &ToolCall,
) -> Decision {
    match client {
        Some(client) if client.contains(&call.name) => Decision::Ask,
        _ => approval.decide(call),
    }
}

/// Refuses a turn whose [`ClientTools`] name one of `specs`, the pipeline's own tools:
/// a call to that name could not be told apart.
pub(super) fn clash(env: &Env, specs: &[ToolSpec]) -> Result<(), Error> {
    match env.extensions.get::<ClientTools>() {
        Some(client) => client
            .clash(specs)
            .map_err(|e| Error::from_layer("DefaultToolPipeline", e)),
        None => Ok(()),
    }
}
