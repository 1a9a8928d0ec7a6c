//! The built-in turn middleware.

mod max_iterations;
mod retry;
mod system_prompt;
mod turn_loop;

pub use crate::session::{
    INTERRUPTED_TOOL_CALL, SessionError, SessionFile, SessionLog, SessionPath,
};
pub use max_iterations::{LimitMode, MaxIterations};
pub use retry::Retry;
pub use system_prompt::{DEFAULT_PROMPT, Environment, Prompt, SystemPrompt};
pub use turn_loop::Loop;
