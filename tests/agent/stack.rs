//! The runtime contract of a stack: order of layers on the way in and out, env
//! isolation between concurrent turns, erasure, named types, events, extensions, and
//! sub-pipelines over env types of their own.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use brute::{
    BoxAgent, Env, Error, Event, EventKind, Handler, Message, Middleware, StopReason, brute_agent,
    middleware::{Loop, MaxIterations},
    pipeline,
    providers::ScriptedModel,
};

/// A shared log of what the layers saw.
type Log = Arc<Mutex<Vec<String>>>;

/// Records the env on the way in and on the way out.
#[derive(Middleware)]
struct Trace<A> {
    app: A,
    #[middleware(into)]
    name: String,
    log: Log,
}

impl<A: Handler<Env>> Handler<Env> for Trace<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.log.lock().unwrap().push(format!(
            "in {} ({} messages)",
            self.name,
            env.messages.len()
        ));
        self.app.call(env).await?;
        self.log.lock().unwrap().push(format!(
            "out {} ({} messages)",
            self.name,
            env.messages.len()
        ));
        Ok(())
    }
}

#[tokio::test]
async fn six_layers_see_the_env_in_order_down_and_back_up() {
    let log = Log::default();
    let model_log = log.clone();
    let agent = brute_agent! {
        use Trace { name: "1", log: log.clone() };
        use Trace { name: "2", log: log.clone() };
        use Trace { name: "3", log: log.clone() };
        use Trace { name: "4", log: log.clone() };
        use Trace { name: "5", log: log.clone() };
        use Trace { name: "6", log: log.clone() };
        run move |env| {
            model_log.lock().unwrap().push(format!("model ({} messages)", env.messages.len()));
            async { Ok(Message::assistant("done")) }
        };
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("done"));
    assert_eq!(outcome.stop, StopReason::Completed);
    let expected: Vec<String> = (1..=6)
        .map(|i| format!("in {i} (1 messages)"))
        .chain(["model (1 messages)".to_string()])
        .chain((1..=6).rev().map(|i| format!("out {i} (2 messages)")))
        .collect();
    assert_eq!(*log.lock().unwrap(), expected);
}

#[test]
fn one_shared_agent_runs_100_concurrent_turns_each_on_its_own_env() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let agent = Arc::new(brute_agent! {
        use Loop::While { condition: |env| env.iteration < 3 };
        use MaxIterations { max: 10 };
        run |env| {
            let prompt = env.messages[0].content.clone();
            let pass = env.iteration;
            async move {
                tokio::task::yield_now().await;
                Ok(Message::assistant(format!("{prompt} / pass {pass}")))
            }
        };
    });
    let outcomes = runtime.block_on(async {
        let handles: Vec<_> = (0..100)
            .map(|i| {
                let agent = agent.clone();
                tokio::spawn(async move { agent.start(format!("turn {i}")).await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for handle in handles {
            outcomes.push(handle.await.unwrap().unwrap());
        }
        outcomes
    });
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(
            outcome.env.messages.len(),
            4,
            "turn {i} saw another turn's messages"
        );
        assert_eq!(outcome.text(), Some(format!("turn {i} / pass 3").as_str()));
    }
}

#[test]
fn agents_and_their_turns_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + 'static>(_: &T) {}
    fn assert_send<T: Send>(_: &T) {}
    let agent = brute_agent! {
        use Loop::While;
        use MaxIterations { max: 3 };
        run ScriptedModel::per_turn([Message::assistant("hi")]);
    };
    assert_send_sync(&agent);
    let turn = agent.start("hello");
    assert_send(&turn);
}

#[tokio::test]
async fn boxed_agents_of_different_stacks_live_in_one_collection() {
    let agents: Vec<BoxAgent> = vec![
        brute_agent! { run |_env| async { Ok(Message::assistant("plain")) }; }.boxed(),
        brute_agent! {
            use brute::middleware::SystemPrompt { prompt: "be brief" };
            use Loop::While { condition: |env| env.iteration < 2 };
            run |env| {
                let pass = env.iteration;
                async move { Ok(Message::assistant(format!("looped {pass}"))) }
            };
        }
        .boxed(),
    ];
    let mut texts = Vec::new();
    for agent in &agents {
        texts.push(agent.start("x").await.unwrap().text().unwrap().to_string());
    }
    assert_eq!(texts, ["plain", "looped 2"]);
}

brute_agent! {
    /// A named agent type, for storing in a struct.
    type Assistant<M>;
    use Loop::While;
    use MaxIterations;
    run M;
}

struct App {
    assistant: Assistant<ScriptedModel>,
}

#[tokio::test]
async fn a_named_agent_type_can_be_stored_in_a_struct() {
    let app = App {
        assistant: brute_agent! {
            use Loop::While;
            use MaxIterations { max: 2 };
            run ScriptedModel::per_turn([Message::assistant("stored")]);
        },
    };
    let outcome = app.assistant.start("hi").await.unwrap();
    assert_eq!(outcome.text(), Some("stored"));
}

#[tokio::test]
async fn events_reach_the_handlers_registered_with_on() {
    let seen = Log::default();
    let mut agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 2 };
        run |env| {
            let pass = env.iteration;
            async move { Ok(Message::assistant(format!("reply {pass}"))) }
        };
    };
    for kind in [
        EventKind::TurnStart,
        EventKind::Iteration,
        EventKind::ModelRequest,
        EventKind::ModelResponse,
        EventKind::TurnEnd,
    ] {
        let seen = seen.clone();
        agent.on(kind, move |_env, event| {
            let line = match event {
                Event::TurnStart => "start".to_string(),
                Event::Iteration { n } => format!("iteration {n}"),
                Event::ModelRequest { messages, .. } => format!("request {messages}"),
                Event::ModelResponse { message, .. } => format!("response {}", message.content),
                Event::TurnEnd { result: Ok(stop) } => format!("end {stop:?}"),
                other => format!("unexpected {other:?}"),
            };
            seen.lock().unwrap().push(line);
        });
    }
    agent.start("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "start",
            "iteration 1",
            "request 1",
            "response reply 1",
            "iteration 2",
            "request 2",
            "response reply 2",
            "end Completed"
        ]
    );
}

/// Leaves a typed value for the layers below it.
#[derive(Middleware)]
struct Budget<A> {
    app: A,
    #[middleware(default = 3)]
    calls: u32,
}

/// What `Budget` leaves in the env's extensions.
struct Remaining(u32);

impl<A: Handler<Env>> Handler<Env> for Budget<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.extensions.insert(Remaining(self.calls));
        self.app.call(env).await
    }
}

#[tokio::test]
async fn middleware_leave_typed_values_for_each_other_in_extensions() {
    let agent = brute_agent! {
        use Budget { calls: 7 };
        run |env| {
            let left = env.extensions.get::<Remaining>().map_or(0, |r| r.0);
            async move { Ok(Message::assistant(format!("{left} left"))) }
        };
    };
    assert_eq!(agent.start("go").await.unwrap().text(), Some("7 left"));
}

/// The env of a sub-pipeline of its own: a counter.
#[derive(Default)]
struct Counter {
    trail: Vec<&'static str>,
}

/// A middleware over the counter env.
#[derive(Middleware)]
struct Mark<A> {
    app: A,
    #[middleware(default = "mark")]
    label: &'static str,
}

impl<A: Handler<Counter>> Handler<Counter> for Mark<A> {
    async fn call(&self, env: &mut Counter) -> Result<(), Error> {
        env.trail.push(self.label);
        self.app.call(env).await?;
        env.trail.push(self.label);
        Ok(())
    }
}

#[tokio::test]
async fn pipeline_builds_stacks_over_other_env_types() {
    let stack = pipeline! {
        use Mark { label: "outer" };
        use Mark { label: "inner" };
        run |env: &mut Counter| {
            env.trail.push("terminal");
            async { Ok(()) }
        };
    };
    let mut env = Counter::default();
    stack.call(&mut env).await.unwrap();
    assert_eq!(env.trail, ["outer", "inner", "terminal", "inner", "outer"]);
}

#[tokio::test]
async fn a_model_error_ends_the_turn_with_a_typed_error() {
    let agent = brute_agent! {
        run ScriptedModel::new([]);
    };
    match agent.start("hi").await {
        Err(Error::Model(err)) => assert!(err.to_string().contains("no reply left"), "{err}"),
        other => panic!("expected a model error, got {other:?}"),
    }
}

/// The options of a hand-written layer: one impl per trait, its placement on the
/// options type.
struct Stamp {
    key: &'static str,
}

impl Stamp {
    fn key(mut self, key: &'static str) -> Self {
        self.key = key;
        self
    }
}

impl brute::Middleware for Stamp {
    type Options = Stamp;
    const PLACEMENT: brute::stack::Placement =
        brute::stack::Placement::new("Stamp", module_path!()).inside::<brute::kind::Loops>();
    fn options() -> Stamp {
        Stamp { key: "stamp" }
    }
}

impl<A> brute::stack::Layer<A> for Stamp {
    type Output = StampLayer<A>;
    fn layer(self, app: A) -> StampLayer<A> {
        StampLayer { app, key: self.key }
    }
}

/// The layer `Stamp` builds: writes the pass into `env.metadata[key]`.
struct StampLayer<A> {
    app: A,
    key: &'static str,
}

impl<A: Handler<Env>> Handler<Env> for StampLayer<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert(self.key.into(), env.iteration.into());
        self.app.call(env).await
    }
}

#[tokio::test]
async fn a_hand_written_layer_with_one_impl_per_trait_works_in_the_macro_and_in_stack() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 3 };
        use Stamp { key: "n" };
        run |_env| async { Ok(Message::assistant("pass")) };
    };
    assert_eq!(agent.start("go").await.unwrap().env.metadata["n"], 3);

    let agent = brute::stack::Stack::new()
        .layer(Loop::While::options().condition(|env| env.iteration < 2))
        .layer(Stamp::options().key("k"))
        .run(ScriptedModel::new([
            Message::assistant("one"),
            Message::assistant("two"),
        ]));
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.env.metadata["k"], 2);
    assert_eq!(outcome.text(), Some("two"));
}

/// Where the closure layer of the test below sits: inside a loop.
struct PerPass;

impl brute::stack::PlaceFn for PerPass {
    const PLACEMENT: brute::stack::Placement =
        brute::stack::Placement::new("PerPass", module_path!()).inside::<brute::kind::Loops>();
}

type CountPasses = brute::stack::MiddlewareFn<brute::stack::NoFn, PerPass>;

#[tokio::test]
async fn a_closure_layer_runs_before_and_after_the_layers_below_in_the_macro_and_in_stack() {
    let log = Log::default();
    let seen = log.clone();
    let agent = brute_agent! {
        use brute::stack::FnLayer { call: async |env, next| {
            seen.lock().unwrap().push(format!("in {}", env.messages.len()));
            let result = next.run(env).await;
            seen.lock().unwrap().push(format!("out {}", env.messages.len()));
            result
        } };
        use Loop::While { condition: |env| env.iteration < 3 };
        use CountPasses { call: async |env, next| {
            env.metadata.insert("passes".into(), env.iteration.into());
            next.run(env).await
        } };
        run |_env| async { Ok(Message::assistant("pass")) };
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.env.metadata["passes"], 3);
    assert_eq!(*log.lock().unwrap(), ["in 1", "out 4"]);

    let agent = brute::stack::Stack::new()
        .layer(Loop::While::options().condition(|env| env.iteration < 2))
        .layer(
            brute::stack::middleware_fn(async |env, next| {
                env.metadata.insert("passes".into(), env.iteration.into());
                next.run(env).await
            })
            .placed::<PerPass>(),
        )
        .run(ScriptedModel::new([
            Message::assistant("one"),
            Message::assistant("two"),
        ]));
    assert_eq!(agent.start("go").await.unwrap().env.metadata["passes"], 2);
}

#[tokio::test]
async fn a_closure_layer_that_ends_the_turn_without_the_layers_below_is_named() {
    let agent = brute_agent! {
        use brute::stack::FnLayer { call: async |_env, _next| Ok(()) };
        run ScriptedModel::new([Message::assistant("never asked")]);
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(error.layer_name(), Some("brute::stack::FnLayer"), "{error}");
}
