//! `Handoffs`: the model hands the conversation to another agent through a
//! `transfer_to_<name>` tool; the target (its own prompt, tools and model) answers the
//! rest of the turn on the history its filter keeps; its messages carry its name into
//! the session; handoffs per turn are capped with a typed error.

#![allow(clippy::unwrap_used)]

use crate::scripted_tools;

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use brute::middleware::{
    HandedOff, Handoff, HandoffError, Handoffs, History, Loop, MaxIterations, SessionLog,
    SystemPrompt,
};
use brute::providers::ScriptedModel;
use brute::{
    BoxAgent, Env, Error, Event, EventKind, Handler, Message, Role, StopReason, ToolCall,
    brute_agent,
};
use scripted_tools::{RunTools, assert_no_dangling_call, echo_calls};
use serde_json::json;

/// A reply calling `tool` with no arguments, with the call id `id`.
fn call(id: &str, tool: &str) -> Message {
    Message::tool_calls("", vec![ToolCall::new(id, tool, json!({}))])
}

/// One model call: the messages it was given and the names of the tools advertised.
type Call = (Vec<Message>, Vec<String>);

/// What a model was given on each call.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Call>>>);

impl Seen {
    fn record(&self, env: &Env) {
        let tools = env.tools.iter().map(|t| t.name.clone()).collect();
        self.0.lock().unwrap().push((env.messages.to_vec(), tools));
    }
    fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }
}

/// The billing agent: its own prompt, its own `echo` tool; it looks a thing up with
/// `echo`, then answers with what the tool said. Records what its model is given.
fn billing(seen: Seen) -> impl Handler<Env> {
    brute_agent! {
        use SystemPrompt { prompt: "You are billing." };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        run ScriptedModel::from_fn(move |env| {
            seen.record(env);
            match env.messages.last() {
                Some(m) if m.role == Role::Tool && m.content == "invoice 7" => {
                    Message::assistant("Invoice 7 was charged twice; refunded.")
                }
                _ => echo_calls("c1", &["invoice 7"]),
            }
        });
    }
}

#[tokio::test]
async fn the_target_answers_the_rest_of_the_turn_with_its_own_prompt_and_tools() {
    let seen = Seen::default();
    let triage_seen = Seen::default();
    let recorder = triage_seen.clone();
    let agent = brute_agent! {
        use SystemPrompt { prompt: "You are triage." };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use Handoffs { to: Handoff::new("billing", billing(seen.clone())) };
        run ScriptedModel::from_fn(move |env| {
            recorder.record(env);
            call("t1", "transfer_to_billing")
        });
    };
    let outcome = agent.start("Why was I charged twice?").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(
        outcome.text(),
        Some("Invoice 7 was charged twice; refunded.")
    );
    // Control never came back: triage's model was called once, and it was offered
    // the transfer tool beside its own.
    let triage_calls = triage_seen.calls();
    assert_eq!(triage_calls.len(), 1);
    assert_eq!(triage_calls[0].1, ["echo", "transfer_to_billing"]);
    // Billing ran with its own prompt, never triage's, and its own tools only.
    let billing_calls = seen.calls();
    assert_eq!(billing_calls.len(), 2);
    let (given, tools) = &billing_calls[0];
    assert_eq!(tools, &["echo"]);
    assert_eq!(given[0], Message::system("You are billing."));
    assert!(given.iter().all(|m| m.content != "You are triage."));
    // The whole history by default: the request, the transfer call and its answer.
    assert_eq!(given[1], Message::user("Why was I charged twice?"));
    assert_eq!(given[2].tool_calls[0].name, "transfer_to_billing");
    assert_eq!(given[3].tool_call_id.as_deref(), Some("t1"));
    // The conversation: triage's call (no name: the served agent's), its answer, then
    // billing's messages, each assistant message named.
    let messages: Vec<&Message> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    let shape: Vec<(Role, Option<&str>)> = messages.iter().map(|m| (m.role, m.agent())).collect();
    assert_eq!(
        shape,
        [
            (Role::User, None),
            (Role::Assistant, None),
            (Role::Tool, None),
            (Role::Assistant, Some("billing")),
            (Role::Tool, None),
            (Role::Assistant, Some("billing")),
        ]
    );
    assert_eq!(messages[2].content, "Handed the conversation to `billing`.");
    assert!(
        outcome
            .env
            .messages
            .iter()
            .all(|m| m.content != "You are billing.")
    );
    assert_no_dangling_call(&outcome.env.messages);
    let handed = outcome.env.extensions.get::<HandedOff>().unwrap();
    assert_eq!((handed.to.as_str(), handed.count), ("billing", 1));
}

/// The messages (without `system` ones) billing's model was first given, under `filter`.
async fn given_under(filter: impl brute::middleware::HistoryFilter + 'static) -> Vec<Message> {
    let seen = Seen::default();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use Handoffs { to: Handoff::new("billing", billing(seen.clone())).history(filter) };
        run ScriptedModel::per_turn([
            Message::tool_calls("Let me look.", vec![ToolCall::new("e1", "echo", json!({"text": "found"}))]),
            call("t1", "transfer_to_billing"),
        ]);
    };
    let outcome = agent.start("Why was I charged twice?").await.unwrap();
    assert_eq!(
        outcome.text(),
        Some("Invoice 7 was charged twice; refunded.")
    );
    let calls = seen.calls();
    calls[0]
        .0
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_target_is_given_the_history_its_filter_keeps() {
    let roles = |messages: &[Message]| messages.iter().map(|m| m.role).collect::<Vec<_>>();
    let all = given_under(History::All).await;
    assert_eq!(
        roles(&all),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool
        ]
    );
    let last = given_under(History::LastUserMessage).await;
    assert_eq!(last, [Message::user("Why was I charged twice?")]);
    let without = given_under(History::WithoutTools).await;
    assert_eq!(
        without,
        [
            Message::user("Why was I charged twice?"),
            Message::assistant("Let me look."),
        ]
    );
    let custom = given_under(|history: &[Message]| {
        vec![Message::user(format!(
            "{} messages before you",
            history.len()
        ))]
    })
    .await;
    assert_eq!(custom, [Message::user("5 messages before you")]);
}

#[tokio::test]
async fn the_session_records_who_answered_and_the_next_turn_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let seen = Seen::default();
    let triage_seen = Seen::default();
    let recorder = triage_seen.clone();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use Handoffs { to: Handoff::new("billing", billing(seen.clone())) };
        run ScriptedModel::from_fn(move |env| {
            recorder.record(env);
            match env.messages.last() {
                Some(m) if m.content == "Thanks" => Message::assistant("You are welcome."),
                _ => call("t1", "transfer_to_billing"),
            }
        });
    };
    agent.start("Why was I charged twice?").await.unwrap();
    let stored = lines(&path);
    assert_no_dangling_call(&stored);
    let named: Vec<Option<&str>> = stored.iter().map(Message::agent).collect();
    assert_eq!(
        named,
        [None, None, None, Some("billing"), None, Some("billing")]
    );
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains(r#""agent":"billing""#)
    );
    // The next turn starts at the served agent, over the whole stored history.
    let outcome = agent.start("Thanks").await.unwrap();
    assert_eq!(outcome.text(), Some("You are welcome."));
    assert_eq!(outcome.message().and_then(Message::agent), None);
    let second = &triage_seen.calls()[1].0;
    assert_eq!(second.len(), 7);
    assert_eq!(second[5].agent(), Some("billing"));
    assert_eq!(lines(&path).len(), 8);
}

fn lines(path: &Path) -> Vec<Message> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn only_the_first_transfer_is_followed_and_the_other_calls_are_answered_not_run() {
    let refunds = brute_agent! {
        run |_env: &Env| async { Ok(Message::assistant("refunds here")) };
    };
    let billing = brute_agent! {
        run |_env: &Env| async { Ok(Message::assistant("billing here")) };
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use Handoffs {
            to: (Handoff::new("billing", billing), Handoff::new("refunds", refunds)),
        };
        run ScriptedModel::new([Message::tool_calls(
            "",
            vec![
                ToolCall::new("e1", "echo", json!({"text": "x"})),
                ToolCall::new("t1", "transfer_to_refunds", json!({})),
                ToolCall::new("t2", "transfer_to_billing", json!({})),
            ],
        )]);
    };
    let outcome = agent.start("money back please").await.unwrap();
    assert_eq!(outcome.text(), Some("refunds here"));
    assert_eq!(outcome.message().and_then(Message::agent), Some("refunds"));
    let results: Vec<(&str, &str)> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.as_deref().unwrap(), m.content.as_str()))
        .collect();
    assert_eq!(
        results,
        [
            (
                "e1",
                "Not run: the conversation was handed to `refunds`, which answers from here."
            ),
            ("t1", "Handed the conversation to `refunds`."),
            (
                "t2",
                "Not run: the conversation was handed to `refunds`, which answers from here."
            ),
        ]
    );
    assert_no_dangling_call(&outcome.env.messages);
}

#[tokio::test]
async fn a_targets_call_ids_that_repeat_the_conversations_are_made_unique() {
    let seen = Seen::default();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use Handoffs { to: Handoff::new("billing", billing(seen)).history(History::LastUserMessage) };
        // Triage's own earlier call has the id billing will use, `c1-0`.
        run ScriptedModel::new([
            echo_calls("c1", &["first"]),
            call("t1", "transfer_to_billing"),
        ]);
    };
    let outcome = agent.start("charged twice").await.unwrap();
    let ids: Vec<&str> = outcome
        .env
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    assert_eq!(ids.len(), 3);
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 3, "{ids:?}");
    assert_no_dangling_call(&outcome.env.messages);
    assert_eq!(
        outcome.text(),
        Some("Invoice 7 was charged twice; refunded.")
    );
}

#[tokio::test]
async fn a_target_may_hand_on_and_the_last_one_is_recorded() {
    let refunds = brute_agent! {
        run |_env: &Env| async { Ok(Message::assistant("refunds here")) };
    };
    let billing = brute_agent! {
        use Handoffs { to: Handoff::new("refunds", refunds) };
        run ScriptedModel::new([call("b1", "transfer_to_refunds")]);
    };
    let agent = brute_agent! {
        use Handoffs { to: Handoff::new("billing", billing) };
        run ScriptedModel::new([call("t1", "transfer_to_billing")]);
    };
    let outcome = agent.start("money back").await.unwrap();
    assert_eq!(outcome.text(), Some("refunds here"));
    let shape: Vec<(Role, Option<&str>)> = outcome
        .env
        .messages
        .iter()
        .map(|m| (m.role, m.agent()))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, None),
            (Role::Assistant, None),
            (Role::Tool, None),
            (Role::Assistant, Some("billing")),
            (Role::Tool, None),
            (Role::Assistant, Some("refunds")),
        ]
    );
    let handed = outcome.env.extensions.get::<HandedOff>().unwrap();
    assert_eq!((handed.to.as_str(), handed.count), ("refunds", 2));
}

#[tokio::test]
async fn a_handoff_over_the_turns_limit_fails_the_turn_with_a_typed_error() {
    let refunds = brute_agent! {
        run |_env: &Env| async { Ok(Message::assistant("refunds here")) };
    };
    // Billing allows one handoff per turn: the turn has made one already.
    let billing = brute_agent! {
        use Handoffs { to: Handoff::new("refunds", refunds), max: 1 };
        run ScriptedModel::new([call("b1", "transfer_to_refunds")]);
    };
    let agent = brute_agent! {
        use Handoffs { to: Handoff::new("billing", billing) };
        run ScriptedModel::new([call("t1", "transfer_to_billing")]);
    };
    let error = agent.start("money back").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<HandoffError>(),
            Some(HandoffError::TooMany { to, limit: 1 }) if to == "refunds"
        ),
        "{error:?}"
    );
    assert_eq!(error.layer_name(), Some("Handoffs"));
}

/// A handler that runs an agent set after it was built: agents that hand the
/// conversation back and forth.
#[derive(Clone, Default)]
struct Late(Arc<OnceLock<BoxAgent>>);

impl Handler<Env> for Late {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        match self.0.get() {
            Some(agent) => agent.call(env).await,
            None => Err(Error::layer("Late", "no agent set")),
        }
    }
}

#[tokio::test]
async fn agents_handing_a_conversation_back_and_forth_stop_at_the_limit_with_every_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (ping, pong) = (Late::default(), Late::default());
    let ping_agent = brute_agent! {
        use Handoffs { to: Handoff::new("pong", pong.clone()) };
        run ScriptedModel::from_fn(|_env| call("", "transfer_to_pong"));
    };
    let pong_agent = brute_agent! {
        use Handoffs { to: Handoff::new("ping", ping.clone()) };
        run ScriptedModel::from_fn(|_env| call("", "transfer_to_ping"));
    };
    ping.0.set(ping_agent.boxed()).ok().unwrap();
    pong.0.set(pong_agent.boxed()).ok().unwrap();
    let served = brute_agent! {
        use SessionLog { path: path.clone() };
        use Handoffs { to: Handoff::new("ping", ping.clone()), max: 4 };
        run ScriptedModel::new([call("t0", "transfer_to_ping")]);
    };
    let error = served.start("go").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<HandoffError>(),
            Some(HandoffError::TooMany { limit: 5, .. })
        ),
        "{error:?}"
    );
    // Every transfer call of the chain is stored and answered: four handed over,
    // the fifth refused (the targets' limit is the default, 5).
    let stored = lines(&path);
    assert_no_dangling_call(&stored);
    let answers: Vec<&str> = stored
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(answers.len(), 6, "{answers:?}");
    assert_eq!(
        answers[5],
        "Not handed to `pong`: this turn reached its limit of 5 handoffs."
    );
}

#[tokio::test]
async fn the_targets_events_reach_the_served_agents_handlers_in_one_turn() {
    let billing = brute_agent! {
        run |env: &Env| {
            env.emit(Event::ContentDelta("billing "));
            env.emit(Event::ContentDelta("here"));
            async { Ok(Message::assistant("billing here")) }
        };
    };
    let mut agent = brute_agent! {
        use Handoffs { to: Handoff::new("billing", billing) };
        run ScriptedModel::new([call("t1", "transfer_to_billing")]);
    };
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    for kind in [
        EventKind::TurnStart,
        EventKind::TurnEnd,
        EventKind::ContentDelta,
    ] {
        let events = events.clone();
        agent.on(kind, move |_env, event| {
            let name = match event {
                Event::TurnStart => "start".to_string(),
                Event::TurnEnd { .. } => "end".to_string(),
                Event::ContentDelta(text) => text.to_string(),
                _ => return,
            };
            events.lock().unwrap().push(name);
        });
    }
    agent.start("hi").await.unwrap();
    assert_eq!(
        *events.lock().unwrap(),
        ["start", "billing ", "here", "end"]
    );
}
