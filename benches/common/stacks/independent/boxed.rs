//! The four layers as `Box<dyn>` trait objects over the independent types: each
//! layer holds the next as a `Box<dyn Layer>` and returns a boxed future (what
//! `#[async_trait]` generates).

use std::future::Future;
use std::pin::Pin;

use super::{
    Conv, Script, Spec, Tool, TurnError, add_system_prompt, advertise, last_is_tool_result,
    over_limit, run_calls, spec,
};

/// The future a layer returns.
pub type BoxFuture<'a> = Pin<Box<dyn Future<Output = Result<(), TurnError>> + Send + 'a>>;

/// A layer of the dynamic stack.
pub trait Layer: Send + Sync {
    /// Handles one pass of `conv`, calling the next layer.
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a>;
}

/// Prepends the system prompt.
struct SystemPrompt {
    next: Box<dyn Layer>,
}

impl Layer for SystemPrompt {
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a> {
        Box::pin(async move {
            add_system_prompt(conv);
            self.next.call(conv).await
        })
    }
}

/// Calls the next layer again while the last message is a tool result.
struct ToolLoop {
    next: Box<dyn Layer>,
}

impl Layer for ToolLoop {
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a> {
        Box::pin(async move {
            loop {
                conv.passes += 1;
                self.next.call(conv).await?;
                if conv.stop.is_some() || !last_is_tool_result(conv) {
                    return Ok(());
                }
            }
        })
    }
}

/// Ends the turn past the limit.
struct Guard {
    next: Box<dyn Layer>,
}

impl Layer for Guard {
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a> {
        Box::pin(async move {
            if over_limit(conv) {
                return Ok(());
            }
            self.next.call(conv).await
        })
    }
}

/// Advertises the tool, calls the next layer, runs the calls of its reply.
struct Tools {
    tool: Tool,
    spec: Spec,
    next: Box<dyn Layer>,
}

impl Layer for Tools {
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a> {
        Box::pin(async move {
            advertise(conv, &self.spec);
            self.next.call(conv).await?;
            run_calls(conv, &self.tool).await;
            Ok(())
        })
    }
}

/// The terminal: one model call.
struct ModelCall {
    model: Script,
}

impl Layer for ModelCall {
    fn call<'a>(&'a self, conv: &'a mut Conv) -> BoxFuture<'a> {
        Box::pin(async move {
            let reply = self.model.complete(conv).await?;
            conv.messages.push(reply);
            Ok(())
        })
    }
}

/// The boxed stack.
pub struct Boxed {
    stack: Box<dyn Layer>,
}

impl Boxed {
    /// System prompt → tool loop → guard → tools → model.
    pub fn new(model: Script, tool: Tool) -> Self {
        let stack = Box::new(SystemPrompt {
            next: Box::new(ToolLoop {
                next: Box::new(Guard {
                    next: Box::new(Tools {
                        tool,
                        spec: spec(),
                        next: Box::new(ModelCall { model }),
                    }),
                }),
            }),
        });
        Boxed { stack }
    }

    /// One turn.
    pub async fn turn(&self) -> Result<Conv, TurnError> {
        let mut conv = Conv::user();
        self.stack.call(&mut conv).await?;
        Ok(conv)
    }
}
