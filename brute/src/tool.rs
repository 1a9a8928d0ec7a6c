//! What a model is told about a tool.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as advertised to the model: its name, what it does, and the JSON Schema of
/// its arguments. The schema is shared (`Arc`), so advertising tools on every pass
/// copies no schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Arc<Value>,
}

impl ToolSpec {
    /// A tool spec.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
        }
    }
}

/// What `#[tool(schema = ..)]` takes: a JSON Schema as a `serde_json::Value`.
#[cfg(feature = "tools")]
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`#[tool(schema = ..)]` takes a JSON Schema as a `serde_json::Value`, not `{Self}`",
    label = "not a `serde_json::Value`",
    note = "write the schema with `serde_json::json!({{ \"type\": \"object\", .. }})` or call a fn returning a `serde_json::Value`"
)]
pub trait ExactSchema {
    /// The schema.
    fn into_schema(self) -> serde_json::Value;
}

#[cfg(feature = "tools")]
impl ExactSchema for serde_json::Value {
    fn into_schema(self) -> serde_json::Value {
        self
    }
}
