//! What the model reads when a call fails: a refused, failed or panicked call's result.

use std::any::Any;

use super::super::error::{ToolError, quoted};
use super::super::tool::ToolOutput;

/// A failed call's result for the model (`Error: tool ..: ..`), marked an error.
pub(super) fn error_text(name: &str, error: &ToolError) -> (ToolOutput, bool) {
    let name = quoted(name);
    (
        ToolOutput::text(format!("Error: tool `{name}`: {error}")),
        true,
    )
}

/// The text of a tool's panic, for [`ToolError::Panicked`].
pub(super) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}
