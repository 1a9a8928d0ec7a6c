// A tool with state: `#[tool]` on an impl block with one `&self` method, holding a
// client-like value without `Arc` or a global; and an exact schema.
use std::sync::Mutex;

use brute::tools::{DefaultToolPipeline, ToolError, ToolSet};
use brute::{Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool};

/// Remembers notes.
struct Notes {
    prefix: String,
    saved: Mutex<Vec<String>>,
}

#[tool]
impl Notes {
    /// Saves a note and says how many there are.
    pub async fn note(&self, text: String) -> Result<String, ToolError> {
        let mut saved = self.saved.lock().map_err(|_| "poisoned")?;
        saved.push(format!("{}{text}", self.prefix));
        Ok(saved.len().to_string())
    }
}

/// Says yes.
#[tool(schema = serde_json::json!({"type": "object", "properties": {}}))]
async fn yes() -> Result<&'static str, ToolError> {
    Ok("yes")
}

fn main() {
    let notes = Notes {
        prefix: "- ".into(),
        saved: Mutex::new(Vec::new()),
    };
    let mut specs = Vec::new();
    (Yes,).specs(&mut specs);
    assert_eq!(*specs[0].parameters, serde_json::json!({"type": "object", "properties": {}}));

    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![ToolCall::new("c1", "note", serde_json::json!({"text": "milk"}))]),
        Message::tool_calls("", vec![ToolCall::new("c2", "note", serde_json::json!({"text": "eggs"}))]),
        Message::assistant("saved"),
    ]);
    let dir = std::env::temp_dir();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (notes, Yes), root: dir.clone(), timeout: None, env_secrets: false };
        run model;
    };
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(agent.start("note milk and eggs"))
        .expect("a turn");
    let results: Vec<&str> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == brute::Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results, ["1", "2"]);
}
