//! Finding skill folders and reading their `SKILL.md` front matter.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::front_matter::{self, Entry, Value};
use crate::tools::sandbox::Sandbox;

/// The file that makes a folder a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// The largest `SKILL.md` read, in bytes (the format asks for bodies under 5,000
/// tokens; this only stops a stray large file from being held).
const MAX_SKILL_FILE: u64 = 1024 * 1024;

/// Why skill folders could not be loaded. Every variant names the file or folder; a
/// malformed `SKILL.md` names its line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A folder or `SKILL.md` could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A `SKILL.md` is not in the published format: no front matter, YAML it cannot
    /// be read as, or a field that breaks the format's rules (`name`, `description`,
    /// `compatibility`, `metadata`, `allowed-tools`).
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        /// The `SKILL.md`.
        path: PathBuf,
        /// The line (1-based) at fault.
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// Two skill folders give the same `name`.
    #[error("two skills are named `{name}`: `{}` and `{}`", first.display(), second.display())]
    Duplicate {
        /// The name.
        name: String,
        /// The first folder found with it.
        first: PathBuf,
        /// The other one.
        second: PathBuf,
    },
}

/// One skill: the front matter of its `SKILL.md` and its folder. Only `name` and
/// `description` are advertised to the model; the rest is for the program (an
/// approval policy may read [`Skill::allowed_tools`], for instance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    name: String,
    description: String,
    license: Option<String>,
    compatibility: Option<String>,
    metadata: BTreeMap<String, String>,
    allowed_tools: Vec<String>,
    dir: PathBuf,
}

impl Skill {
    /// The skill's name (its folder's name): lowercase letters, digits and single
    /// hyphens, at most 64 characters.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the skill does and when to use it (at most 1,024 characters).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The `license` field: a license's name or the name of a file in the folder.
    pub fn license(&self) -> Option<&str> {
        self.license.as_deref()
    }

    /// The `compatibility` field: what the skill needs of its environment.
    pub fn compatibility(&self) -> Option<&str> {
        self.compatibility.as_deref()
    }

    /// The `metadata` map.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The `allowed-tools` field (experimental in the format): the tools the skill
    /// may use without asking, split at spaces (and commas, as some products write
    /// it). Read, not enforced: brute approves calls through the pipeline's
    /// `approval` policy.
    pub fn allowed_tools(&self) -> &[String] {
        &self.allowed_tools
    }

    /// The skill's folder (canonical), to which its file requests are confined.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The skills found in some folders: what the [`Skills`](super::Skills) layer
/// advertises and the [`LoadSkill`](super::LoadSkill) tool loads. Cheap to clone
/// (shared).
#[derive(Clone, Default)]
pub struct SkillLibrary {
    inner: Arc<Library>,
}

#[derive(Default)]
struct Library {
    /// By name.
    skills: Vec<Skill>,
    /// The system message advertising them (empty when there are none).
    catalog: String,
}

impl fmt::Debug for SkillLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.inner.skills.iter().map(|s| &s.name))
            .finish()
    }
}

impl SkillLibrary {
    /// Reads the skills in `dirs`. Each folder is a skill when it holds a
    /// `SKILL.md`; otherwise each of its sub-folders holding one is (folders whose
    /// name starts with `.` are skipped, and so are sub-folders without a
    /// `SKILL.md`). Only front matter is read now: bodies and other files are read
    /// when the model asks for them.
    ///
    /// A folder that cannot be read, a malformed `SKILL.md` (naming its line) and
    /// two skills of one name are errors.
    pub fn load<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> Result<Self, SkillError> {
        let mut skills: Vec<Skill> = Vec::new();
        for dir in dirs {
            let dir = dir.as_ref();
            if dir.join(SKILL_FILE).is_file() {
                skills.push(load_skill(dir)?);
                continue;
            }
            let io = |source| SkillError::Io {
                path: dir.to_path_buf(),
                source,
            };
            let mut folders = Vec::new();
            for entry in std::fs::read_dir(dir).map_err(io)? {
                let path = entry.map_err(io)?.path();
                let hidden = path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'));
                if !hidden && path.join(SKILL_FILE).is_file() {
                    folders.push(path);
                }
            }
            folders.sort();
            for folder in folders {
                skills.push(load_skill(&folder)?);
            }
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(pair) = skills.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(SkillError::Duplicate {
                name: pair[0].name.clone(),
                first: pair[0].dir.clone(),
                second: pair[1].dir.clone(),
            });
        }
        let catalog = catalog(&skills);
        Ok(SkillLibrary {
            inner: Arc::new(Library { skills, catalog }),
        })
    }

    /// The skills, by name.
    pub fn skills(&self) -> &[Skill] {
        &self.inner.skills
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        let skills = &self.inner.skills;
        skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &skills[i])
    }

    /// Whether no skill was found.
    pub fn is_empty(&self) -> bool {
        self.inner.skills.is_empty()
    }

    /// The system message the [`Skills`](super::Skills) layer adds: how to use
    /// skills, then each skill's name and description, and nothing else of it.
    pub fn catalog(&self) -> &str {
        &self.inner.catalog
    }
}

/// Reads `dir/SKILL.md` (beneath the folder, as the tools read files) and checks its
/// front matter.
fn load_skill(dir: &Path) -> Result<Skill, SkillError> {
    let file = dir.join(SKILL_FILE);
    let io = |source| SkillError::Io {
        path: file.clone(),
        source,
    };
    let sandbox = Sandbox::new(dir).map_err(io)?;
    let text = read_skill_file(&sandbox).map_err(io)?;
    let bad = |line: usize, message: String| SkillError::Malformed {
        path: file.clone(),
        line,
        message,
    };
    let (entries, _body) =
        front_matter::split(&text).map_err(|m| bad(m.line, m.message.clone()))?;
    let folder = sandbox
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut skill = Skill {
        name: String::new(),
        description: String::new(),
        license: None,
        compatibility: None,
        metadata: BTreeMap::new(),
        allowed_tools: Vec::new(),
        dir: sandbox.root().to_path_buf(),
    };
    let (mut has_name, mut has_description) = (false, false);
    for Entry { key, value, line } in entries {
        let text = |value: Value| match value {
            Value::Scalar(s) => Ok(s),
            Value::Null => Ok(String::new()),
            _ => Err(bad(line, format!("`{key}` takes a string"))),
        };
        match key.as_str() {
            "name" => {
                skill.name = text(value)?.trim().to_string();
                check_name(&skill.name, &folder).map_err(|m| bad(line, m))?;
                has_name = true;
            }
            "description" => {
                let description = text(value)?.trim().to_string();
                if description.is_empty() {
                    return Err(bad(
                        line,
                        "`description` is empty: say what the skill does and when to use it".into(),
                    ));
                }
                let chars = description.chars().count();
                if chars > 1024 {
                    return Err(bad(
                        line,
                        format!(
                            "`description` is {chars} characters long; the format allows at most 1024"
                        ),
                    ));
                }
                skill.description = description;
                has_description = true;
            }
            "license" => skill.license = Some(text(value)?.trim().to_string()),
            "compatibility" => {
                let compatibility = text(value)?.trim().to_string();
                let chars = compatibility.chars().count();
                if chars > 500 {
                    return Err(bad(
                        line,
                        format!(
                            "`compatibility` is {chars} characters long; the format allows at most 500"
                        ),
                    ));
                }
                skill.compatibility = Some(compatibility);
            }
            "metadata" => match value {
                Value::Map(map) => skill.metadata = map.into_iter().collect(),
                Value::Null => {}
                _ => {
                    return Err(bad(
                        line,
                        "`metadata` takes a map: `key: value` lines indented below it".into(),
                    ));
                }
            },
            "allowed-tools" => {
                skill.allowed_tools = match value {
                    Value::List(list) => list,
                    Value::Null => Vec::new(),
                    Value::Scalar(s) => s
                        .split([' ', ','])
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                        .collect(),
                    Value::Map(_) => {
                        return Err(bad(
                            line,
                            "`allowed-tools` takes tool names separated by spaces".into(),
                        ));
                    }
                }
            }
            // Fields of other products (`model`, `argument-hint`, ..) are left alone,
            // so that skill folders written for them load unchanged.
            _ => {}
        }
    }
    if !has_name {
        return Err(bad(1, "the front matter has no `name`".into()));
    }
    if !has_description {
        return Err(bad(1, "the front matter has no `description`".into()));
    }
    Ok(skill)
}

/// The text of the skill's `SKILL.md`, read beneath its folder, refused over
/// [`MAX_SKILL_FILE`] bytes or when it is not UTF-8.
pub(crate) fn read_skill_file(sandbox: &Sandbox) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = sandbox.open(Path::new(SKILL_FILE))?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SKILL_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the file is larger than {MAX_SKILL_FILE} bytes"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "the file is not UTF-8"))
}

/// The format's rules for `name`: 1 to 64 characters, lowercase letters, digits and
/// hyphens, no hyphen at either end or twice in a row, and the folder's name.
fn check_name(name: &str, folder: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("`name` is empty".into());
    }
    let chars = name.chars().count();
    if chars > 64 {
        return Err(format!(
            "`name` is {chars} characters long; the format allows at most 64"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c == '-' || (c.is_alphanumeric() && !c.is_uppercase())))
    {
        return Err(format!(
            "`name` `{name}` has `{c}`: only lowercase letters, digits and hyphens are allowed"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "`name` `{name}` starts or ends with a hyphen or has two in a row"
        ));
    }
    if name != folder {
        return Err(format!(
            "`name` `{name}` is not the name of its folder `{folder}` (the format asks that they match)"
        ));
    }
    Ok(())
}

/// The system message advertising `skills`: names and descriptions only, in the
/// `<available_skills>` form the format's integration guide suggests.
fn catalog(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Skills\n\nSkills are instructions and files for particular tasks. When a task \
         matches a skill's description, call the `skill` tool with the skill's name to \
         read its instructions before you start, and call it again with `file` to read \
         a file they mention (a path inside the skill's folder).\n\n<available_skills>\n",
    );
    for skill in skills {
        out.push_str(&format!(
            "<skill>\n<name>{}</name>\n<description>{}</description>\n</skill>\n",
            escape(&skill.name),
            escape(&skill.description)
        ));
    }
    out.push_str("</available_skills>");
    out
}

/// `text` with `&`, `<` and `>` escaped, so a description cannot close the list.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
