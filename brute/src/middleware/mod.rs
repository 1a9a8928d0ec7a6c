//! The built-in turn middleware. Each is reached at this one path; what belongs to a
//! layer's own concern (the session's files, errors and stores) stays in its module
//! ([`session`](crate::session)).

pub(crate) mod backoff;
mod budget;
mod call_limit;
pub mod guard;
mod handoff;
mod max_iterations;
mod retry;
mod system_prompt;
mod turn_loop;

pub use crate::session::log::SessionLog;
pub use budget::{Budget, BudgetError, BudgetExceeded, BudgetScope};
#[cfg(feature = "tools")]
pub(crate) use call_limit::CallQuota;
pub use call_limit::{CallLimit, CallLimitMode, ToolLimits};
pub use guard::layer::Guardrail;
pub use handoff::{
    HandedOff, Handoff, HandoffError, Handoffs, History, HistoryFilter, Target, Targets,
};
pub use max_iterations::{LimitMode, MaxIterations};
pub use retry::Retry;
pub use system_prompt::{DEFAULT_PROMPT, Environment, Prompt, SystemPrompt};
pub use turn_loop::Loop;
