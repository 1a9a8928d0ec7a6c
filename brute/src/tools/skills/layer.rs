//! `Skills`: the layer that advertises a library's skills to the model.

use super::library::SkillLibrary;
use super::tool::TOOL_NAME;
use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::trace::traced;

/// Advertises the skills of a [`SkillLibrary`] to the model: a system message with
/// each skill's name and description, and nothing else of it. The model loads a
/// skill's instructions, and then its files, with the `skill` tool
/// ([`SkillLibrary::tool`]), which the tool pipeline above this layer runs.
///
/// On each pass, before the model call, the layer adds the list as a system message
/// after the leading system messages (the `SystemPrompt`'s, when the stack has one
/// above it), unless it is already there; a system message is not part of the stored
/// record, so sessions store nothing of it. A library without skills adds nothing. If
/// the pipeline above does not advertise the `skill` tool, the turn fails with an
/// error saying so, rather than list skills the model cannot load.
///
/// ```
/// use brute::{Message, Role, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel};
/// use brute::tools::{DefaultToolPipeline, SkillLibrary, Skills};
///
/// # let dir = tempfile::tempdir().unwrap();
/// # let root = dir.path();
/// std::fs::create_dir_all(root.join("release-notes/references"))?;
/// std::fs::write(root.join("release-notes/SKILL.md"), "---\n\
///     name: release-notes\n\
///     description: Writes release notes from a changelog. Use when asked for release notes.\n\
///     ---\n\
///     # Release notes\n\nGroup the entries as in references/STYLE.md.\n")?;
/// std::fs::write(root.join("release-notes/references/STYLE.md"), "Added, Changed, Fixed.\n")?;
///
/// let library = SkillLibrary::load([root])?;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::per_turn([
///     Message::tool_calls("", vec![ToolCall::new("c1", "skill", serde_json::json!({"name": "release-notes"}))]),
///     Message::tool_calls("", vec![ToolCall::new("c2", "skill",
///         serde_json::json!({"name": "release-notes", "file": "references/STYLE.md"}))]),
///     Message::assistant("Added: skills."),
/// ]);
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use DefaultToolPipeline { tools: library.tool(), root: root.to_path_buf() };
///     use Skills { skills: library.clone() };
///     run model;
/// };
/// let outcome = agent.start("Release notes, please.").await?;
/// let messages = &outcome.env.messages;
/// // The model was told the name and the description, not the instructions.
/// assert_eq!(messages[0].role, Role::System);
/// assert!(messages[0].content.contains("<name>release-notes</name>"));
/// assert!(!messages[0].content.contains("Group the entries"));
/// // It loaded them, then the file they name.
/// assert!(messages[3].content.contains("Group the entries as in references/STYLE.md."));
/// assert_eq!(messages[5].content, "1\tAdded, Changed, Fixed.");
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `skills` | [`SkillLibrary`] | none: no skills, nothing added | the skills advertised ([`SkillLibrary::load`]) |
///
/// Placement: inside the tool pipeline (a layer that provides `ToolPipeline`, such as
/// `DefaultToolPipeline`), whose tools include [`SkillLibrary::tool`]; checked at
/// compile time. A `SystemPrompt` goes above it (it adds its prompt only to a
/// conversation that does not already start with a system message).
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = crate::kind::ToolPipeline)]
pub struct Skills<A> {
    app: A,
    /// The skills: `SkillLibrary::load(["skills"])?`.
    skills: SkillLibrary,
}

impl<A: Handler<Env>> Handler<Env> for Skills<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let catalog = self.skills.catalog();
        if catalog.is_empty() {
            return self.app.call(env).await;
        }
        if !env.tools.iter().any(|t| t.name == TOOL_NAME) {
            return Err(Error::layer(
                "Skills",
                "the `skill` tool is not advertised, so the model could not load the skills it is told about: add `library.tool()` to the tools of the tool pipeline above `Skills`",
            ));
        }
        let span = tracing::info_span!(
            "brute.skills",
            brute.layer = "Skills",
            brute.skills.count = self.skills.skills().len(),
        );
        let leading = env
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        if !env.messages[..leading].iter().any(|m| m.content == catalog) {
            env.messages.insert(leading, Message::system(catalog));
        }
        traced!(self.app.call(env), span)
    }
}
