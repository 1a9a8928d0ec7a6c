//! An eval: the cases of `examples/eval/cases.jsonl` run through an agent with a tool,
//! scored (the expected answer contained, the expected tool call made with its
//! arguments, a JSON answer matching its schema, a model's judgement), printed as a
//! table and, when asked, written as a JSON report and compared with an earlier one.
//!
//! ```text
//! cargo run --example eval                                          # scripted, offline
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example eval           # a real model (and judge)
//! cargo run --example eval -- --report now.json                     # write the JSON report
//! cargo run --example eval -- --report now.json --baseline before.json
//! ```
//!
//! With `--baseline`, the regressions since that report are listed (a case that passed
//! and now fails, a score that dropped) and the example exits with status 1 if there is
//! any: the check a CI job runs. Offline, the scripted model gets one case wrong on
//! purpose (it says Sydney), so the table shows a failure.

use std::process::ExitCode;

use brute::providers::{self, AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Env, Message, Model, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
    tool,
};
use brute_eval::{Contains, Dataset, Eval, JsonSchema, Judge, Progress, Report, ToolCalled};
use serde_json::json;

/// The dataset's name in reports, and its text (built into the example, so that it runs
/// from any folder).
pub const DATASET: (&str, &str) = (
    "examples/eval/cases.jsonl",
    include_str!("eval/cases.jsonl"),
);

/// Today's weather in a city (a stand-in: always the same report).
#[tool]
async fn weather(
    /// The city.
    city: String,
) -> Result<String, ToolError> {
    Ok(format!("{city}: 4 °C, light snow"))
}

/// Runs the dataset on `model`, graded where a judgement is needed by `judge`.
pub async fn run(
    model: AnyModel,
    judge: AnyModel,
    progress: Progress,
) -> Result<Report, Box<dyn std::error::Error>> {
    let (name, text) = DATASET;
    let dataset = Dataset::from_jsonl(name, text)?;
    let root = std::env::temp_dir();
    let label = model.name().to_owned();
    let agent = brute_agent! {
        use SystemPrompt { prompt: "Answer briefly. Use a tool when asked to." };
        use Loop::ToolResult;
        use MaxIterations { max: 4 };
        use DefaultToolPipeline { tools: (Weather,), root: root.as_path() };
        run model;
    };
    let city = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "population": {"type": "integer", "minimum": 0}
        },
        "required": ["name", "population"],
        "additionalProperties": false
    });
    let eval = Eval::new(dataset)
        .label(label)
        .concurrency(3)
        .progress(progress)
        .scorer(Contains::default().ignore_case())
        .scorer(ToolCalled)
        .scorer_when(JsonSchema::new(city)?, |case| case.id.starts_with("json-"))
        .scorer_when(
            Judge::new(judge).criteria("Welcoming, and one sentence."),
            |case| case.id.starts_with("open-"),
        );
    Ok(eval.run_agent(&agent).await)
}

/// The scripted agent: answers each prompt of the dataset, calls the weather tool for
/// the weather, and gets Australia wrong.
pub fn script(env: &Env) -> Message {
    let prompt = env
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    let tool_result = env.messages.last().filter(|m| m.role == Role::Tool);
    if prompt.contains("weather") {
        return match tool_result {
            None => Message::tool_calls(
                "",
                vec![ToolCall::new("w1", "weather", json!({"city": "Oslo"}))],
            ),
            Some(result) => Message::assistant(format!("Right now: {}.", result.content)),
        };
    }
    let answer = if prompt.contains("France") {
        "Paris."
    } else if prompt.contains("17 + 25") {
        "42"
    } else if prompt.contains("Bern") {
        r#"{"name": "Bern", "population": 134794}"#
    } else if prompt.contains("Welcome") {
        "Welcome aboard: we are glad you are here!"
    } else if prompt.contains("Australia") {
        "Sydney."
    } else {
        "I do not know."
    };
    Message::assistant(answer)
}

/// The scripted judge: passes an answer that says "welcome", as a model would grade
/// the one case it judges.
pub fn judge_script(env: &Env) -> Message {
    let question = env
        .messages
        .last()
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    let answer = question
        .split_once("Answer to grade:\n")
        .map(|(_, answer)| answer)
        .unwrap_or_default();
    let verdict = if answer.to_lowercase().contains("welcome") {
        json!({"pass": true, "reason": "It welcomes the contributor in one sentence."})
    } else {
        json!({"pass": false, "reason": "It does not welcome anyone."})
    };
    Message::assistant(verdict.to_string())
}

/// The scripted models, agent and judge.
pub fn scripted() -> (AnyModel, AnyModel) {
    (
        ScriptedModel::from_fn(script).named("scripted").into(),
        ScriptedModel::from_fn(judge_script)
            .named("scripted-judge")
            .into(),
    )
}

#[allow(dead_code)] // the tests include this file for `run`, not `main`
#[tokio::main]
async fn main() -> ExitCode {
    let mut report_path = None;
    let mut baseline_path = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--report", Some(path)) => report_path = Some(path),
            ("--baseline", Some(path)) => baseline_path = Some(path),
            _ => {
                eprintln!("usage: eval [--report PATH] [--baseline PATH]");
                return ExitCode::from(2);
            }
        }
    }
    let (model, judge) = match providers::from_env() {
        Ok(Some(model)) => {
            println!(
                "[model: {} (from BRUTE_MODEL or an API key), judging itself]",
                model.name()
            );
            (model.clone(), model)
        }
        Ok(None) => {
            println!(
                "[model: scripted, offline; set BRUTE_MODEL=openai:gpt-4o-mini to use a real one]"
            );
            scripted()
        }
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let report = match run(model, judge, Progress::Auto).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("eval: {error}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report.table());
    if let Some(path) = &report_path {
        if let Err(error) = report.save(path) {
            eprintln!("eval: {error}");
            return ExitCode::FAILURE;
        }
        println!("report: {path}");
    }
    if let Some(path) = &baseline_path {
        let baseline = match Report::load(path) {
            Ok(baseline) => baseline,
            Err(error) => {
                eprintln!("eval: {error}");
                return ExitCode::FAILURE;
            }
        };
        let comparison = report.compare(&baseline);
        print!("against {path}: {comparison}");
        if !comparison.is_clean() {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
