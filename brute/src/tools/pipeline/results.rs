//! Where a call's result goes: appended to the transcript after the reply, made
//! durable and reported.

use super::super::tool::ToolOutput;
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::message::Message;

/// Appends the result of call `index` of the reply at `reply`, makes it durable (the
/// durability step, [`Env::persist`]) and reports it.
pub(super) async fn append_result(
    env: &mut Env,
    reply: usize,
    index: usize,
    (output, is_error): (ToolOutput, bool),
) -> Result<(), Error> {
    let id = env.messages[reply].tool_calls[index].id.clone();
    let mut message = Message::tool_result(id, output.content);
    if !output.parts.is_empty() {
        *message.parts_mut() = output.parts;
    }
    env.messages.push(message);
    if env.persists() {
        env.persist().await?;
    }
    if let Some(result) = env.messages.last() {
        env.emit(Event::ToolResult {
            call: &env.messages[reply].tool_calls[index],
            result,
            is_error,
        });
    }
    Ok(())
}
