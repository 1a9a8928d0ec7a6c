//! Tool dispatch and execution overhead.
//!
//! - `dispatch`: validate + run one no-op call of the last tool of a 12-tool set,
//!   static (a tuple, dispatched by name without `dyn`) against a boxed `Registry`.
//! - `turn`: a scripted turn with 5 no-op tool calls (6 model calls), through
//!   `Loop::ToolResult` + `DefaultToolPipeline`, against a hand-written loop that calls
//!   the tool directly.
//!
//! Run: `cargo bench --bench tools`.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use brute::tools::{
    PreparedCall, Registry, ToolCallEnv, ToolContext, ToolError, ToolSet, standard_call_pipeline,
};
use brute::{
    Env, Handler, Message, Model, Role, ToolCall, brute_agent, middleware::Loop,
    providers::ScriptedModel, tool, tools::DefaultToolPipeline,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

macro_rules! noop_tools {
    ($($name:ident => $fn:ident),*) => {$(
        /// Does nothing.
        #[tool]
        async fn $fn(n: u64) -> Result<String, ToolError> {
            Ok(n.to_string())
        }
    )*};
}

noop_tools!(T1 => t1, T2 => t2, T3 => t3, T4 => t4, T5 => t5, T6 => t6, T7 => t7, T8 => t8, T9 => t9, T10 => t10, T11 => t11, T12 => t12);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn dispatch(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    let tuple = (T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12);
    let mut registry = Registry::new();
    registry
        .register(T1)
        .register(T2)
        .register(T3)
        .register(T4)
        .register(T5)
        .register(T6)
        .register(T7)
        .register(T8)
        .register(T9)
        .register(T10)
        .register(T11)
        .register(T12);
    let call = ToolCall::new("c", "t12", json!({"n": 7}));
    let pipeline = standard_call_pipeline();

    let mut group = c.benchmark_group("tools/dispatch");
    group.bench_function("static_tuple_12", |b| {
        b.to_async(&rt).iter(|| async {
            let mut env = ToolCallEnv::new(call.clone(), &tuple, &cx);
            pipeline.call(&mut env).await.unwrap();
            black_box(env.result)
        })
    });
    group.bench_function("registry_12", |b| {
        b.to_async(&rt).iter(|| async {
            let mut env = ToolCallEnv::new(call.clone(), &registry, &cx);
            pipeline.call(&mut env).await.unwrap();
            black_box(env.result)
        })
    });
    group.finish();
    assert!(tuple.contains("t12") && registry.contains("t12"));
}

fn script() -> Vec<Message> {
    let mut replies: Vec<Message> = (0..5)
        .map(|i| {
            Message::tool_calls(
                "",
                vec![ToolCall::new(format!("c{i}"), "t1", json!({"n": i}))],
            )
        })
        .collect();
    replies.push(Message::assistant("done"));
    replies
}

/// The limit: a loop written by hand around the same model and tool.
async fn hand_written(model: &ScriptedModel, cx: &ToolContext) -> Env {
    let mut env = Env::new();
    env.messages.push(Message::user("go"));
    loop {
        let reply = model.complete(&env).await.unwrap().message;
        let calls = reply.tool_calls.clone();
        env.messages.push(reply);
        if calls.is_empty() {
            return env;
        }
        for call in calls {
            let prepared = T1.prepare(&call).unwrap().unwrap();
            let out = prepared.run(cx).await.unwrap();
            env.messages
                .push(Message::tool_result(call.id, out.content));
        }
    }
}

fn turn(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    let model = ScriptedModel::per_turn(script());
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (T1,), root: dir.path() };
        run model.clone();
    };

    let mut group = c.benchmark_group("tools/turn_5_calls");
    group.bench_function("hand_written_loop", |b| {
        b.to_async(&rt).iter(|| async {
            let env = hand_written(&model, &cx).await;
            assert_eq!(
                env.messages.iter().filter(|m| m.role == Role::Tool).count(),
                5
            );
            black_box(env)
        })
    });
    group.bench_function("default_tool_pipeline", |b| {
        b.to_async(&rt).iter(|| async {
            let outcome = agent.start("go").await.unwrap();
            assert_eq!(outcome.env.messages.len(), 12);
            black_box(outcome)
        })
    });
    group.finish();
}

criterion_group!(benches, dispatch, turn);
criterion_main!(benches);
