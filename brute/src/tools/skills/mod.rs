//! Agent Skills: folders with a `SKILL.md` (YAML front matter with `name` and
//! `description`, then instructions in Markdown) and the files beside it
//! (`scripts/`, `references/`, `assets/`, ..), in the published format that several
//! agent products read, so existing skill folders load unchanged.
//!
//! Loaded progressively: [`SkillLibrary::load`] reads only the front matter; the
//! [`Skills`] layer tells the model each skill's name and description; the model
//! calls the `skill` tool ([`LoadSkill`]) for a skill's instructions, then for a file
//! they mention, confined to the skill's folder.
//!
//! | file | what |
//! |---|---|
//! | `front_matter.rs` | the YAML subset of front matter, read without a YAML library |
//! | `library.rs` | [`SkillLibrary`], [`Skill`], [`SkillError`]: finding and checking skills |
//! | `tool.rs` | [`LoadSkill`]: the `skill` tool |
//! | `layer.rs` | [`Skills`]: the layer that advertises them |

mod front_matter;
mod layer;
mod library;
mod tool;

pub use layer::Skills;
pub use library::{Skill, SkillError, SkillLibrary};
pub use tool::{LoadSkill, LoadSkillArgs};
