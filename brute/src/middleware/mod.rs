//! The built-in turn middleware.

mod max_iterations;
mod system_prompt;
mod turn_loop;

pub use max_iterations::{LimitMode, MaxIterations, MaxIterationsOptions};
pub use system_prompt::{DEFAULT_PROMPT, Prompt, SystemPrompt, SystemPromptOptions};
pub use turn_loop::Loop;
