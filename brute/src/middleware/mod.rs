//! The built-in turn middleware. Each is reached at this one path; what belongs to a
//! layer's own concern (the session's files, errors and stores) stays in its module
//! ([`session`](crate::session)).

mod budget;
mod call_limit;
pub mod guard;
mod max_iterations;
mod retry;
mod system_prompt;
mod turn_loop;

pub use crate::session::log::SessionLog;
pub use budget::{Budget, BudgetError, BudgetExceeded, BudgetScope};
pub use call_limit::{CallLimit, CallLimitMode};
pub use guard::layer::Guardrail;
pub use max_iterations::{LimitMode, MaxIterations};
pub use retry::Retry;
pub use system_prompt::{DEFAULT_PROMPT, Environment, Prompt, SystemPrompt};
pub use turn_loop::Loop;
