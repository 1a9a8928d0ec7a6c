//! 07 — sub-agents as tools: named, configurable sub-agents, each with its own tools,
//! prompt and model, offered to a main agent as tools. The main model calls both in
//! one reply and the tool pipeline runs them in parallel; each answers with its report.
//!
//! ```text
//! cargo run --example 07_sub_agents
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example 07_sub_agents
//! ```
//!
//! `SubAgent` below is the whole pattern: a [`Tool`] whose `call` runs a stack of its
//! own. (`brute::tools::Delegate` is the built-in one: one read-only researcher.)

mod common;

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use brute::providers::{AnyModel, ScriptedModel};
use brute::structured::{schemars, serde};
use brute::tools::{
    DefaultToolPipeline, FsSearch, Read, Shell, Tool, ToolContext, ToolError, ToolOutput, ToolSet,
};
use brute::{
    Env, Message, Outcome, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};
use serde_json::json;

/// The arguments every sub-agent takes.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
struct TaskArgs {
    /// The task, stated completely: the sub-agent sees nothing else.
    task: String,
}

/// When each sub-agent started and finished, to show they overlapped.
type Timeline = Arc<Mutex<Vec<(&'static str, &'static str, Instant)>>>;

/// A named sub-agent: its own tools, prompt and model, run as one tool call.
#[derive(Clone)]
struct SubAgent<T> {
    name: &'static str,
    description: &'static str,
    prompt: &'static str,
    tools: T,
    model: AnyModel,
    max_passes: u32,
    timeline: Timeline,
}

impl<T> SubAgent<T> {
    fn mark(&self, what: &'static str) {
        if let Ok(mut timeline) = self.timeline.lock() {
            timeline.push((self.name, what, Instant::now()));
        }
    }
}

impl<T: ToolSet + Clone + 'static> Tool for SubAgent<T> {
    type Args = TaskArgs;

    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    async fn call(&self, args: TaskArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.mark("start");
        let (prompt, tools, model, max) = (
            self.prompt,
            self.tools.clone(),
            self.model.clone(),
            self.max_passes,
        );
        let root: PathBuf = cx.sandbox().root().to_path_buf();
        let agent = brute_agent! {
            use SystemPrompt { prompt: prompt };
            use Loop::ToolResult;
            use MaxIterations { max: max };
            use DefaultToolPipeline { tools: tools, root: root };
            run model;
        };
        // Boxed: a whole stack inside a tool call would otherwise nest its future's
        // layout in the caller's.
        let turn: Pin<Box<dyn Future<Output = Result<Outcome, brute::Error>> + Send + '_>> =
            Box::pin(agent.start(args.task));
        let outcome = turn
            .await
            .map_err(|e| ToolError::failed(format!("sub-agent `{}` failed: {e}", self.name)))?;
        self.mark("end");
        let report = outcome.text().unwrap_or("(no report)").to_owned();
        Ok(report.into())
    }
}

/// The main agent's offline model: asks both sub-agents at once, then combines them.
pub(crate) fn lead_script(env: &Env) -> Message {
    let results = common::results_this_turn(env);
    if results.is_empty() {
        return Message::tool_calls(
            "Asking the counter and the researcher at the same time.",
            vec![
                ToolCall::new(
                    "c",
                    "counter",
                    json!({"task": "How many lines has plan.md?"}),
                ),
                ToolCall::new(
                    "r",
                    "researcher",
                    json!({"task": "Which files mention `deadline`?"}),
                ),
            ],
        );
    }
    let reports: Vec<String> = results.iter().map(|r| r.content.clone()).collect();
    Message::assistant(format!("Summary: {}", reports.join(" ")))
}

/// The researcher's offline model: one search, then its report.
pub(crate) fn researcher_script(env: &Env) -> Message {
    match common::results_this_turn(env).first() {
        None => Message::tool_calls(
            "",
            vec![ToolCall::new(
                "s",
                "fs_search",
                json!({"pattern": "deadline"}),
            )],
        ),
        Some(found) => {
            let files: Vec<&str> = found
                .content
                .lines()
                .filter_map(|l| l.split(':').next())
                .collect();
            Message::assistant(format!("`deadline` appears in: {}.", files.join(", ")))
        }
    }
}

/// The counter's offline model: counts with the shell (slowly, to show the overlap).
pub(crate) fn counter_script(env: &Env) -> Message {
    match common::results_this_turn(env).first() {
        None => Message::tool_calls(
            "",
            vec![ToolCall::new(
                "w",
                "shell",
                json!({"command": "sleep 0.3; wc -l < plan.md"}),
            )],
        ),
        Some(out) => Message::assistant(format!("plan.md has {} lines.", out.content.trim())),
    }
}

pub(crate) async fn run(
    lead: AnyModel,
    researcher_model: AnyModel,
    counter_model: AnyModel,
    root: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    common::fs::write(
        root.join("plan.md"),
        "# Plan\nShip v1.\nThe deadline is Friday.\n",
    )?;
    common::fs::write(root.join("notes.txt"), "Ask about the deadline.\n")?;
    let timeline = Timeline::default();
    let researcher = SubAgent {
        name: "researcher",
        description: "A research sub-agent with read-only tools: give it a question about the project's files.",
        prompt: "You research a project with read and fs_search, then report in one sentence.",
        tools: (Read, FsSearch),
        model: researcher_model,
        max_passes: 5,
        timeline: timeline.clone(),
    };
    let counter = SubAgent {
        name: "counter",
        description: "A sub-agent with a shell: give it anything to count or measure.",
        prompt: "You measure things with the shell, then report the number in one sentence.",
        tools: Shell,
        model: counter_model,
        max_passes: 5,
        timeline: timeline.clone(),
    };
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You lead two sub-agents, `researcher` and `counter`. Call both at once when you need both." };
        use Loop::ToolResult;
        use MaxIterations { max: 6 };
        use DefaultToolPipeline { tools: (researcher, counter), root: root.to_path_buf() };
        run lead;
    };
    common::print_turns(&mut agent);
    let task = "Which files mention the deadline, and how long is plan.md?";
    println!("user: {task}");
    let outcome = agent.start(task).await?;
    let answered = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    let timeline = timeline.lock().map(|t| t.clone()).unwrap_or_default();
    let started = |name: &str| {
        timeline
            .iter()
            .find(|(n, w, _)| *n == name && *w == "start")
            .map(|t| t.2)
    };
    let ended = |name: &str| {
        timeline
            .iter()
            .find(|(n, w, _)| *n == name && *w == "end")
            .map(|t| t.2)
    };
    let overlapped = match (
        started("researcher"),
        ended("researcher"),
        started("counter"),
        ended("counter"),
    ) {
        (Some(rs), Some(re), Some(cs), Some(ce)) => rs < ce && cs < re,
        _ => false,
    };
    println!("({answered} sub-agent reports; the sub-agents ran in parallel: {overlapped})");
    if answered < 2 || !overlapped {
        return Err("both sub-agents should have run, at the same time".into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let lead = common::model(ScriptedModel::from_fn(lead_script).named("scripted-lead"));
    // Each sub-agent has a model of its own: offline, its own script; with a real
    // model configured, that model (give each another spec if you like).
    let (researcher, counter) = if lead.is_scripted() {
        (
            ScriptedModel::from_fn(researcher_script)
                .named("scripted-researcher")
                .into(),
            ScriptedModel::from_fn(counter_script)
                .named("scripted-counter")
                .into(),
        )
    } else {
        (lead.clone(), lead.clone())
    };
    let root = common::fs::tempdir()?;
    Ok(run(lead, researcher, counter, root.path()).await?)
}
