//! The middleware users reach for, in one agent: a model that falls back to a second
//! one when the first is rate limited (`Fallback`), limits on model and tool calls per
//! turn (`CallLimit`), a skill loaded when the model asks for it (`Skills` and the
//! `skill` tool, over `examples/skills/`), and a guardrail that redacts email
//! addresses from what the model says before anyone sees or stores it (`Guardrail`
//! with `PiiGuard`).
//!
//! ```text
//! cargo run --example guarded
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example guarded
//! ```

mod common;

use std::path::Path;

use brute::middleware::guard::{Action, Pii, PiiGuard};
use brute::middleware::{CallLimit, Guardrail, Loop};
use brute::model::{AnsweredBy, Fallback};
use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, SkillLibrary, Skills};
use brute::{Completion, Env, Error, Message, Model, ModelError, Role, ToolCall, brute_agent};
use serde_json::json;

/// A model that is always over its rate limit: the first of the fallback list.
struct Overloaded;

impl Model for Overloaded {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        Err(Error::Model(ModelError::RateLimited { retry_after: None }))
    }

    fn name(&self) -> &str {
        "overloaded"
    }
}

/// Offline: loads the `refunds` skill, then answers from it.
pub fn script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![ToolCall::new("s1", "skill", json!({ "name": "refunds" }))],
        ),
        _ => Message::assistant(
            "Sorry about that. Refunds take five working days: write to refunds@example.com.",
        ),
    }
}

/// Runs one turn; with the scripted model, fails unless the second model answered, the
/// skill was loaded and the address never reached the answer.
pub async fn run(model: AnyModel, skills: &Path, scripted: bool) -> Result<(), Error> {
    let library = SkillLibrary::load([skills]).map_err(Error::other)?;
    let agent = brute_agent! {
        use Loop::ToolResult;
        use CallLimit { model_calls: 4, tool_calls: 3 };
        use DefaultToolPipeline { tools: (library.tool(),) };
        use Skills { skills: library.clone() };
        use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact) };
        run Fallback::new(Overloaded).or(model);
    };
    let outcome = agent
        .start("I was charged twice. Can I get my money back?")
        .await?;
    let answer = outcome.text().unwrap_or_default().to_string();
    let answered_by = outcome.env.extensions.get::<AnsweredBy>().cloned();
    let loaded = outcome
        .env
        .messages
        .iter()
        .any(|m| m.role == Role::Tool && m.content.contains("five working days"));
    println!("[answered by {answered_by:?}; skill loaded: {loaded}]\n{answer}");
    if scripted
        && (answer.contains("refunds@example.com")
            || !answer.contains("[REDACTED_EMAIL]")
            || !loaded
            || answered_by.map(|a| a.attempt) != Some(2))
    {
        return Err(Error::layer(
            "example",
            "expected the second model to answer from the skill with the address redacted",
        ));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let scripted = model.is_scripted();
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/skills");
    Ok(run(model, &skills, scripted).await?)
}
