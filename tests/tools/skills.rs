//! Agent Skills: skill folders in the published layout load unchanged; the model is
//! told only names and descriptions, loads a skill's instructions and files through
//! the `skill` tool, confined to the skill's folder; an unknown skill is a tool result
//! listing the skills; a malformed `SKILL.md` is an error naming its file and line.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use brute::middleware::{Loop, SystemPrompt};
use brute::providers::ScriptedModel;
use brute::tools::{DefaultToolPipeline, SkillError, SkillLibrary, Skills, Tools};
use brute::{Message, Role, ToolCall, brute_agent};
use serde_json::json;

/// The instructions of `pdf-processing`, which the model must not see until it asks.
const PDF_BODY: &str = "Use pdfplumber to extract text: see references/REFERENCE.md.";

/// A folder of skills laid out as the published examples are: front matter with the
/// optional fields (a folded description, `license`, `metadata`, `allowed-tools`, and
/// a field of another product), `references/` and `scripts/` beside it.
fn skill_folders(root: &Path) {
    let pdf = root.join("pdf-processing");
    std::fs::create_dir_all(pdf.join("references")).unwrap();
    std::fs::create_dir_all(pdf.join("scripts")).unwrap();
    std::fs::write(
        pdf.join("SKILL.md"),
        format!(
            "---\nname: pdf-processing\ndescription: >-\n  Extract text and tables from PDF files.\n  \
             Use when the user mentions PDFs.\nlicense: Apache-2.0\nmetadata:\n  author: example-org\n  \
             version: \"1.0\"\nallowed-tools: Bash(python:*) Read\nmodel: some-product-field\n---\n\n\
             # PDF processing\n\n{PDF_BODY}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        pdf.join("references/REFERENCE.md"),
        "pdfplumber.open(path)\n",
    )
    .unwrap();
    std::fs::write(pdf.join("scripts/extract.py"), "import pdfplumber\n").unwrap();
    let notes = root.join("release-notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join("SKILL.md"),
        "---\nname: release-notes\ndescription: \"Writes release notes: grouped, terse.\"\n---\nGroup by kind.\n",
    )
    .unwrap();
    // A folder without a SKILL.md is not a skill.
    std::fs::create_dir_all(root.join("not-a-skill")).unwrap();
}

fn skill_call(id: &str, args: serde_json::Value) -> Message {
    Message::tool_calls("", vec![ToolCall::new(id, "skill", args)])
}

#[test]
fn published_skill_folders_load_with_their_optional_fields() {
    let dir = tempfile::tempdir().unwrap();
    skill_folders(dir.path());
    let library = SkillLibrary::load([dir.path()]).unwrap();
    let names: Vec<&str> = library.skills().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["pdf-processing", "release-notes"]);
    let pdf = library.get("pdf-processing").unwrap();
    assert_eq!(
        pdf.description(),
        "Extract text and tables from PDF files. Use when the user mentions PDFs."
    );
    assert_eq!(pdf.license(), Some("Apache-2.0"));
    assert_eq!(pdf.metadata()["author"], "example-org");
    assert_eq!(pdf.metadata()["version"], "1.0");
    assert_eq!(pdf.allowed_tools(), ["Bash(python:*)", "Read"]);
    assert_eq!(
        library.get("release-notes").unwrap().description(),
        "Writes release notes: grouped, terse."
    );
    // One skill folder given directly is that skill.
    let one = SkillLibrary::load([dir.path().join("release-notes")]).unwrap();
    assert_eq!(one.skills().len(), 1);
}

#[tokio::test]
async fn only_names_and_descriptions_are_advertised_and_the_model_loads_the_rest_on_request() {
    let dir = tempfile::tempdir().unwrap();
    skill_folders(dir.path());
    let library = SkillLibrary::load([dir.path()]).unwrap();
    let model = ScriptedModel::per_turn([
        skill_call("c1", json!({"name": "pdf-processing"})),
        skill_call(
            "c2",
            json!({"name": "pdf-processing", "file": "references/REFERENCE.md"}),
        ),
        skill_call(
            "c3",
            json!({"name": "pdf-processing", "file": "scripts/extract.py"}),
        ),
        Message::assistant("done"),
    ]);
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Tools::READ_ONLY, library.tool()), root: root.clone() };
        use Skills { skills: library.clone() };
        run model;
    };
    let outcome = agent.start("Extract the tables of a.pdf").await.unwrap();
    let messages = &outcome.env.messages;
    // The system prompt first, then the skills, once although the loop made four passes.
    assert_eq!(messages[0].content, "You are terse.");
    let system: Vec<&Message> = messages.iter().filter(|m| m.role == Role::System).collect();
    assert_eq!(system.len(), 2, "{system:#?}");
    let catalog = &system[1].content;
    assert!(catalog.contains("<name>pdf-processing</name>"), "{catalog}");
    assert!(
        catalog.contains(
            "<description>Extract text and tables from PDF files. Use when the user mentions PDFs.</description>"
        ),
        "{catalog}"
    );
    assert!(catalog.contains("<name>release-notes</name>"), "{catalog}");
    for hidden in [
        PDF_BODY,
        "Group by kind",
        "pdfplumber",
        "Apache-2.0",
        "example-org",
    ] {
        assert!(!catalog.contains(hidden), "{hidden} advertised: {catalog}");
    }
    // What the model was sent on its first call: no instructions anywhere.
    let results: Vec<&Message> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 3);
    let body = &results[0].content;
    assert!(body.contains(PDF_BODY), "{body}");
    assert!(
        !body.contains("allowed-tools"),
        "front matter in the body: {body}"
    );
    assert!(body.contains("references/REFERENCE.md"), "{body}");
    assert!(body.contains("scripts/extract.py"), "{body}");
    assert_eq!(results[1].content, "1\tpdfplumber.open(path)");
    assert_eq!(results[2].content, "1\timport pdfplumber");
    assert_eq!(outcome.text(), Some("done"));
}

#[tokio::test]
async fn a_file_outside_the_skill_folder_is_refused_however_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    skill_folders(&skills);
    std::fs::write(dir.path().join("secret.txt"), "TOP-SECRET\n").unwrap();
    let pdf = skills.join("pdf-processing");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), pdf.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), pdf.join("out")).unwrap();
    let library = SkillLibrary::load([&skills]).unwrap();
    let secret = dir.path().join("secret.txt").display().to_string();
    let tries = [
        "../../secret.txt".to_string(),
        "references/../../../secret.txt".to_string(),
        secret,
        "link.txt".to_string(),
        "out/secret.txt".to_string(),
        // Another skill's folder is outside this one's, too.
        "../release-notes/SKILL.md".to_string(),
    ];
    let replies: Vec<Message> = tries
        .iter()
        .enumerate()
        .map(|(i, file)| {
            skill_call(
                &format!("c{i}"),
                json!({"name": "pdf-processing", "file": file}),
            )
        })
        .chain([Message::assistant("done")])
        .collect();
    let model = ScriptedModel::per_turn(replies);
    let root = skills.clone();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: library.tool(), root: root.clone() };
        use Skills { skills: library.clone() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let results: Vec<&Message> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), tries.len());
    let outside = dir.path().display().to_string();
    for (file, result) in tries.iter().zip(results) {
        let text = &result.content;
        assert!(text.starts_with("Error: tool `skill`"), "{file}: {text}");
        assert!(!text.contains("TOP-SECRET"), "{file}: {text}");
        assert!(!text.contains("Group by kind"), "{file}: {text}");
        assert!(
            text.contains("not a file of skill `pdf-processing`"),
            "{file}: {text}"
        );
        // The folder's place on the server is not shown.
        assert!(
            !text.replace(file.as_str(), "").contains(&outside),
            "{file}: {text}"
        );
    }
}

#[tokio::test]
async fn an_unknown_skill_is_a_tool_result_listing_the_skills_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    skill_folders(dir.path());
    let library = SkillLibrary::load([dir.path()]).unwrap();
    let model = ScriptedModel::per_turn([
        skill_call("c1", json!({"name": "pdf"})),
        Message::assistant("sorry"),
    ]);
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: library.tool(), root: root.clone() };
        use Skills { skills: library.clone() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let result = outcome
        .env
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(
        result.content.contains(
            "there is no skill named `pdf`; the skills are: pdf-processing, release-notes"
        ),
        "{}",
        result.content
    );
    assert_eq!(outcome.text(), Some("sorry"));
}

/// Writes one skill `name` with `SKILL.md` text `text` and loads it.
fn load_one(name: &str, text: &str) -> (tempfile::TempDir, Result<SkillLibrary, SkillError>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(name)).unwrap();
    std::fs::write(dir.path().join(name).join("SKILL.md"), text).unwrap();
    let loaded = SkillLibrary::load([dir.path()]);
    (dir, loaded)
}

#[test]
fn a_malformed_skill_md_is_an_error_naming_its_file_and_line() {
    let cases = [
        (
            "a",
            "name: a\ndescription: b\n",
            1,
            "starts with a line `---`",
        ),
        ("a", "---\nname: a\ndescription: b\n", 1, "never closed"),
        (
            "a",
            "---\nname: a\ndescription: \"b\n---\n",
            3,
            "never closed",
        ),
        ("a", "---\n  oops: x\nname: a\n---\n", 2, "indented line"),
        (
            "a",
            "---\nname: a\ndescription b\n---\n",
            3,
            "expected `key: value`",
        ),
        ("a", "---\nname: a\nname: a\n---\n", 3, "given twice"),
        ("a", "---\ndescription: d\n---\n", 1, "no `name`"),
        ("a", "---\nname: a\n---\n", 1, "no `description`"),
        (
            "a",
            "---\nname: a\ndescription:\n---\n",
            3,
            "`description` is empty",
        ),
        (
            "pdf",
            "---\n# c\nname: PDF\ndescription: d\n---\n",
            3,
            "only lowercase",
        ),
        ("a-", "---\nname: a-\ndescription: d\n---\n", 2, "hyphen"),
        (
            "a--b",
            "---\nname: a--b\ndescription: d\n---\n",
            2,
            "two in a row",
        ),
        (
            "other",
            "---\nname: pdf\ndescription: d\n---\n",
            2,
            "not the name of its folder",
        ),
        (
            "a",
            "---\nname: a\nmetadata: x\ndescription: d\n---\n",
            3,
            "takes a map",
        ),
        (
            "a",
            "---\nname: a\nmetadata:\n  k:\n    deep: x\ndescription: d\n---\n",
            4,
            "takes a value",
        ),
    ];
    for (folder, text, line, said) in cases {
        let (dir, loaded) = load_one(folder, text);
        let err = loaded.unwrap_err();
        assert!(
            matches!(&err, SkillError::Malformed { line: l, .. } if *l == line),
            "{text:?}: {err}"
        );
        let message = err.to_string();
        let file = dir.path().join(folder).join("SKILL.md");
        let file = std::fs::canonicalize(file).unwrap();
        assert!(
            message.starts_with(&format!("{}:{line}: ", file.display())),
            "{text:?}: {message}"
        );
        assert!(message.contains(said), "{text:?}: {message}");
    }
    let long = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
    let err = load_one("a", &long).1.unwrap_err().to_string();
    assert!(err.contains("at most 1024"), "{err}");
    let exactly = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1024));
    assert!(load_one("a", &exactly).1.is_ok());
}

#[test]
fn two_skills_of_one_name_are_an_error_naming_both_folders() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir.path().join("x")).unwrap();
        std::fs::write(
            dir.path().join("x/SKILL.md"),
            "---\nname: x\ndescription: d\n---\n",
        )
        .unwrap();
    }
    let err = SkillLibrary::load([a.path(), b.path()]).unwrap_err();
    assert!(
        matches!(err, SkillError::Duplicate { ref name, .. } if name == "x"),
        "{err}"
    );
}

#[tokio::test]
async fn skills_without_the_skill_tool_fail_the_turn_saying_what_to_add() {
    let dir = tempfile::tempdir().unwrap();
    skill_folders(dir.path());
    let library = SkillLibrary::load([dir.path()]).unwrap();
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::READ_ONLY, root: root.clone() };
        use Skills { skills: library.clone() };
        run |_env| async { Ok(Message::assistant("unreachable")) };
    };
    let err = agent.start("go").await.unwrap_err().to_string();
    assert!(err.contains("`skill` tool is not advertised"), "{err}");
    assert!(err.contains("library.tool()"), "{err}");
}

#[tokio::test]
async fn a_library_without_skills_adds_nothing_and_needs_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let library = SkillLibrary::load([dir.path()]).unwrap();
    assert!(library.is_empty());
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::READ_ONLY, root: root.clone() };
        use Skills { skills: library.clone() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let outcome = agent.start("go").await.unwrap();
    assert!(outcome.env.messages.iter().all(|m| m.role != Role::System));
    assert_eq!(outcome.text(), Some("hi"));
}
