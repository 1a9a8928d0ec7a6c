//! The built-in turn middleware.

mod max_iterations;
mod retry;
mod system_prompt;
mod turn_loop;

pub use crate::session::{
    INTERRUPTED_TOOL_CALL, SessionError, SessionFile, SessionLog, SessionLogOptions, SessionPath,
};
pub use max_iterations::{LimitMode, MaxIterations, MaxIterationsOptions};
pub use retry::{Retry, RetryOptions};
pub use system_prompt::{DEFAULT_PROMPT, Environment, Prompt, SystemPrompt, SystemPromptOptions};
pub use turn_loop::Loop;
