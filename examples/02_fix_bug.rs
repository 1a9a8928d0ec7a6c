//! 02 — fix a bug: a temporary project whose check fails. The agent runs the check
//! with the real `shell` tool, reads the code, fixes it with the real `patch` tool and
//! runs the check again, until it passes. The example then runs the check itself and
//! fails unless it passes.
//!
//! ```text
//! cargo run --example 02_fix_bug                                  # scripted, offline
//! BRUTE_MODEL=anthropic:claude-sonnet-4-5 cargo run --example 02_fix_bug
//! ```

mod common;

use std::path::Path;
use std::process::Command;

use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{
    Env, Message, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};
use serde_json::json;

/// The project: a shell library with a bug, and the check that finds it.
const LIB: &str = "# Arithmetic helpers.\nadd() {\n  echo $(( $1 - $2 ))\n}\n";
const CHECK: &str = "#!/usr/bin/env bash\n# The project's check: exits 0 when every case passes.\nsource ./lib.sh\nfail=0\nfor case in \"2 3 5\" \"10 -4 6\" \"0 0 0\"; do\n  set -- $case\n  got=$(add \"$1\" \"$2\")\n  if [ \"$got\" != \"$3\" ]; then echo \"FAIL: add $1 $2 = $got, expected $3\"; fail=1; fi\ndone\n[ $fail = 0 ] && echo \"all checks pass\"\nexit $fail\n";

const TASK: &str = "`bash check.sh` fails in this project. Find the bug, fix it, and run the check until it passes.";

/// The offline model: check, read, patch, check, report; each step chosen from the
/// last tool result, so a patch that did not fix the check would be tried again.
pub(crate) fn script(env: &Env) -> Message {
    let results = common::results_this_turn(env);
    let check = |id: &str| {
        Message::tool_calls(
            "Running the check.",
            vec![ToolCall::new(
                id,
                "shell",
                json!({"command": "bash check.sh"}),
            )],
        )
    };
    let Some(last) = results.last() else {
        return check("check_0");
    };
    let from = last.tool_call_id.as_deref().unwrap_or("");
    if from.starts_with("check") {
        if last.content.contains("all checks pass") {
            return Message::assistant(
                "Fixed: `add` in lib.sh subtracted (`$1 - $2`); it now adds, and `bash check.sh` passes.",
            );
        }
        return Message::tool_calls(
            "The check fails; reading lib.sh.",
            vec![ToolCall::new(
                "read",
                "read",
                json!({"file_path": "lib.sh"}),
            )],
        );
    }
    if from == "read" {
        return Message::tool_calls(
            "`add` subtracts. Patching it.",
            vec![ToolCall::new(
                "patch",
                "patch",
                json!({"file_path": "lib.sh", "old_string": "$(( $1 - $2 ))", "new_string": "$(( $1 + $2 ))"}),
            )],
        );
    }
    check(&format!("check_{}", results.len()))
}

fn write_project(root: &Path) -> Result<(), common::PathError> {
    common::fs::write(root.join("lib.sh"), LIB)?;
    common::fs::write(root.join("check.sh"), CHECK)
}

fn check_passes(root: &Path) -> Result<bool, String> {
    Ok(Command::new("bash")
        .arg("check.sh")
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run `bash check.sh` in {}: {e}", root.display()))?
        .status
        .success())
}

pub(crate) async fn run(model: AnyModel, root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    write_project(root)?;
    if check_passes(root)? {
        return Err("the project should start with a failing check".into());
    }
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You fix bugs. Run the project's check with `shell`, read the code, change it with `patch` (exact text), and rerun the check until it passes." };
        use Loop::ToolResult;
        use MaxIterations { max: 20 };
        use DefaultToolPipeline { tools: Tools::ALL, root: root.to_path_buf() };
        run model;
    };
    common::print_turns(&mut agent);
    println!("user: {TASK}");
    let outcome = agent.start(TASK).await?;
    println!(
        "(stopped: {:?} after {} passes)",
        outcome.stop, outcome.env.iteration
    );
    if !check_passes(root)? {
        return Err("the check still fails".into());
    }
    println!("`bash check.sh` passes.");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let root = common::fs::tempdir()?;
    Ok(run(model, root.path()).await?)
}
