//! The limit: the turn as one hand-written loop over the independent types.

use super::{
    Conv, Msg, Role, Script, Spec, Tool, TurnError, advertise, last_is_tool_result, over_limit,
    run_calls, spec,
};
use crate::scenario::{PROMPT, USER};

/// The hand-written loop: system prompt, tool loop, guard and tool execution in one
/// async fn.
pub struct Hand {
    model: Script,
    tool: Tool,
    spec: Spec,
}

impl Hand {
    /// The loop over `model`, running `tool`.
    pub fn new(model: Script, tool: Tool) -> Self {
        Hand {
            model,
            tool,
            spec: spec(),
        }
    }

    /// One turn.
    pub async fn turn(&self) -> Result<Conv, TurnError> {
        let mut conv = Conv {
            messages: vec![Msg::text(Role::System, PROMPT), Msg::text(Role::User, USER)],
            ..Conv::default()
        };
        advertise(&mut conv, &self.spec);
        loop {
            conv.passes += 1;
            if over_limit(&mut conv) {
                return Ok(conv);
            }
            let reply = self.model.complete(&conv).await?;
            conv.messages.push(reply);
            run_calls(&mut conv, &self.tool).await;
            if !last_is_tool_result(&conv) {
                return Ok(conv);
            }
        }
    }
}
