//! `skill`: the tool that loads a skill's instructions or one of its files.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::front_matter;
use super::library::{SKILL_FILE, SkillLibrary, read_skill_file};
use crate::tools::error::quoted;
use crate::tools::sandbox::Sandbox;
use crate::tools::{Read, ReadArgs, Tool, ToolContext, ToolError, ToolOutput};

/// The name the model calls [`LoadSkill`] by.
pub(crate) const TOOL_NAME: &str = "skill";

/// Files of a skill listed after its instructions, at most.
const MAX_LISTED: usize = 100;

/// Arguments of `skill`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadSkillArgs {
    /// The skill's name, as listed under "Skills".
    pub name: String,
    /// A file of the skill to read instead of its instructions: a path relative to
    /// the skill's folder, such as `references/REFERENCE.md`.
    #[serde(default)]
    pub file: Option<String>,
    /// With `file`: the first line to show, counting from 1 (default 1).
    #[serde(default)]
    pub start_line: Option<usize>,
    /// With `file`: the last line to show (default: as many as fit).
    #[serde(default)]
    pub end_line: Option<usize>,
}

/// `skill`: loads a skill of its [`SkillLibrary`] when the model asks for it.
///
/// Without `file` it returns the body of the skill's `SKILL.md` (the instructions
/// after the front matter) and the list of the other files in its folder; with
/// `file`, that file, read by the built-in [`Read`] tool in a context whose root is
/// the skill's folder: numbered lines, images as images, binary files refused, and
/// every path confined to the folder as the file tools confine theirs ([`Sandbox`]:
/// no `..` out of it, no symbolic link leading out). A name that is not a skill is an
/// error result listing the skills' names, and the turn goes on.
///
/// Made by [`SkillLibrary::tool`]; advertised by the [`Skills`](super::Skills) layer.
#[derive(Clone, Debug)]
pub struct LoadSkill {
    library: SkillLibrary,
}

impl SkillLibrary {
    /// The tool that loads these skills, for the pipeline's tools:
    /// `tools: (Tools::READ_ONLY, library.tool())`.
    pub fn tool(&self) -> LoadSkill {
        LoadSkill {
            library: self.clone(),
        }
    }
}

impl Tool for LoadSkill {
    type Args = LoadSkillArgs;

    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        "Load a skill listed under \"Skills\": its instructions, or with `file` one file of its folder (a path relative to the folder, as the instructions name it)."
    }

    async fn call(&self, args: LoadSkillArgs, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(skill) = self.library.get(&args.name) else {
            let names: Vec<&str> = self.library.skills().iter().map(|s| s.name()).collect();
            return Err(ToolError::failed(format!(
                "there is no skill named `{}`; the skills are: {}",
                quoted(&args.name),
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let name = skill.name().to_string();
        let dir = skill.dir().to_path_buf();
        let Some(file) = args.file else {
            return tokio::task::spawn_blocking(move || instructions(&name, &dir))
                .await
                .map_err(|e| ToolError::failed(format!("the file task failed: {e}")))?;
        };
        let cx = ToolContext::new(&dir).map_err(|e| {
            ToolError::failed(format!(
                "the folder of skill `{name}` cannot be opened: {e}"
            ))
        })?;
        let read = ReadArgs {
            file_path: file.clone(),
            start_line: args.start_line,
            end_line: args.end_line,
        };
        match Read.call(read, &cx).await {
            // The folder's place on the server is not the model's business: the
            // message names the path as the model gave it.
            Err(ToolError::Path(_)) => Err(ToolError::failed(format!(
                "`{}` is not a file of skill `{name}`: a path stays inside the skill's folder",
                quoted(&file)
            ))),
            other => other,
        }
    }
}

/// The body of the skill's `SKILL.md` and the list of its other files.
fn instructions(name: &str, dir: &Path) -> Result<ToolOutput, ToolError> {
    let sandbox = Sandbox::new(dir).map_err(|e| {
        ToolError::failed(format!(
            "the folder of skill `{name}` cannot be opened: {e}"
        ))
    })?;
    let text =
        read_skill_file(&sandbox).map_err(|e| ToolError::io("cannot read", SKILL_FILE, e))?;
    let (_, body) = front_matter::split(&text).map_err(|m| {
        ToolError::failed(format!(
            "the {SKILL_FILE} of skill `{name}` is malformed at {m}"
        ))
    })?;
    let mut out = format!("<skill name=\"{name}\">\n{}\n</skill>", body.trim_end());
    let mut files = Vec::new();
    list_files(&sandbox, Path::new(""), &mut files);
    files.retain(|f| f != SKILL_FILE);
    if !files.is_empty() {
        files.sort();
        let total = files.len();
        out.push_str(&format!(
            "\n\nFiles of this skill (read one with `skill` and `file`):\n{}",
            files
                .iter()
                .take(MAX_LISTED)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        ));
        if total > MAX_LISTED {
            out.push_str(&format!("\n(and {} more)", total - MAX_LISTED));
        }
    }
    Ok(out.into())
}

/// The files under `at` in the skill's folder (listed beneath it, hidden names
/// skipped), relative to the folder, until more than [`MAX_LISTED`] are found.
fn list_files(sandbox: &Sandbox, at: &Path, out: &mut Vec<String>) {
    let Ok(entries) = sandbox.list(if at.as_os_str().is_empty() {
        Path::new(".")
    } else {
        at
    }) else {
        return;
    };
    for (entry, is_dir) in entries {
        if entry.starts_with('.') || out.len() > MAX_LISTED {
            continue;
        }
        let path = at.join(&entry);
        if is_dir {
            list_files(sandbox, &path, out);
        } else {
            out.push(path.to_string_lossy().into_owned());
        }
    }
}
