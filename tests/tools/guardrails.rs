//! `Guardrail` and `PiiGuard`: input, output and tool-call checks that pass, rewrite
//! or block; a blocked turn ends with `ExitReason::Blocked`, stored in the session;
//! streamed replies are filtered without letting a value split across deltas through;
//! an input check may run while the model call does.

#![allow(clippy::unwrap_used)]

use crate::scripted_tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use brute::middleware::guard::{Action, Check, Guard, Pii, PiiGuard, Stage, blocked_reason};
use brute::middleware::{Guardrail, Loop, SessionLog};
use brute::stream::{TurnItem, TurnResult};
use brute::{Env, Event, ExitReason, Message, Role, StopReason, ToolCall, brute_agent};
use scripted_tools::{RunTools, assert_no_dangling_call};

fn blocked(stage: &'static str, reason: &str) -> StopReason {
    StopReason::Exited(ExitReason::Blocked {
        by: "Guardrail",
        stage,
        reason: reason.into(),
    })
}

/// Every item of a streamed turn.
async fn collect(mut stream: brute::stream::TurnStream<'_>) -> Vec<TurnItem> {
    let mut items = Vec::new();
    while let Some(item) = stream.next_item().await {
        items.push(item);
    }
    items
}

/// The streamed text of a turn.
async fn stream_text(items: &[TurnItem]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            TurnItem::ContentDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_blocked_prompt_never_reaches_the_model_and_the_reason_is_stored_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let calls = Arc::new(AtomicU32::new(0));
    let agent = {
        let (calls, path) = (calls.clone(), path.clone());
        brute_agent! {
            use SessionLog { path };
            use Loop::ToolResult;
            use RunTools;
            use Guardrail { guard: PiiGuard::new().detect(Pii::Card, Action::Block) };
            run move |_env: &Env| {
                calls.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Ok::<_, brute::Error>(Message::assistant("noted")))
            };
        }
    };
    let outcome = agent.start("my card: 4111 1111 1111 1111").await.unwrap();
    let reason = "the prompt contains a card number";
    assert_eq!(outcome.stop, blocked("input", reason));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // The next turn loads the session: the blocked turn's reason is its last reply.
    let outcome = agent.start("and now?").await.unwrap();
    let history = outcome.env.messages.as_slice();
    let stored = history.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(
        blocked_reason(stored),
        Some(ExitReason::Blocked {
            by: "Guardrail",
            stage: "input",
            reason: reason.into()
        })
    );
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_redacted_prompt_is_what_the_model_sees_and_what_the_session_stores() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let agent = {
        let (seen, path) = (seen.clone(), path.clone());
        brute_agent! {
            use SessionLog { path };
            use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact).detect(Pii::Ip, Action::Mask) };
            run move |env: &Env| {
                *seen.lock().unwrap() = env.messages.last().unwrap().content.clone();
                std::future::ready(Ok::<_, brute::Error>(Message::assistant("ok")))
            };
        }
    };
    agent
        .start("mail ann@example.com from 192.168.10.77")
        .await
        .unwrap();
    let redacted = "mail [REDACTED_EMAIL] from ***.***.10.77";
    assert_eq!(*seen.lock().unwrap(), redacted);
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(file.contains(redacted), "{file}");
    assert!(!file.contains("ann@example.com"), "{file}");
}

/// A model that streams `pieces` as deltas and answers their concatenation.
fn streaming(
    pieces: &'static [&'static str],
) -> impl Fn(&Env) -> std::future::Ready<Result<Message, brute::Error>> + Send + Sync {
    move |env: &Env| {
        for piece in pieces {
            env.emit(Event::ContentDelta(piece));
        }
        std::future::ready(Ok(Message::assistant(pieces.concat())))
    }
}

#[tokio::test]
async fn a_value_split_across_deltas_is_rewritten_before_the_caller_or_the_session_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let agent = {
        let path = path.clone();
        brute_agent! {
            use SessionLog { path };
            use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact).detect(Pii::Card, Action::Mask) };
            run streaming(&["Write to ann@exa", "mple.com, card 4111 11", "11 1111 1111 now."]);
        }
    };
    let mut env = agent.env();
    env.messages.push(Message::user("who?"));
    let items: Vec<TurnItem> = collect(agent.stream(env)).await;
    let expected = "Write to [REDACTED_EMAIL], card **** **** **** 1111 now.";
    let deltas: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            TurnItem::ContentDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stream_text(&items).await, expected);
    // Released as soon as each word is finished: not held to the end.
    assert_eq!(deltas[0], "Write to ");
    for delta in &deltas {
        assert!(
            !delta.contains("ann@") && !delta.contains("exa") && !delta.contains("4111"),
            "{delta}"
        );
    }
    let reply = items.iter().find_map(|i| match i {
        TurnItem::Message { message } => Some(message.content.clone()),
        _ => None,
    });
    assert_eq!(reply.as_deref(), Some(expected));
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(
        file.contains(expected) && !file.contains("ann@example.com") && !file.contains("4111 1111"),
        "{file}"
    );
}

#[test]
fn the_filter_holds_back_only_the_unfinished_word_and_matches_the_whole_reply_at_any_split() {
    let guard = PiiGuard::new()
        .detect(Pii::Email, Action::Redact)
        .detect(Pii::Card, Action::Mask)
        .detect(Pii::Phone, Action::Hash)
        .detect(Pii::Url, Action::Redact)
        .detect(Pii::Ip, Action::Redact);
    let mut filter = guard.deltas().unwrap();
    let mut out = String::new();
    filter.push("Hello there, mail ann@exa", &mut out);
    assert_eq!(out, "Hello there, mail ");
    out.clear();
    filter.push("mple.com now", &mut out);
    assert_eq!(out, "[REDACTED_EMAIL] ");
    out.clear();
    filter.finish(&mut out);
    assert_eq!(out, "now");

    let text = "Reach bob@mail.example.org, +1 555 010 0199 or (555) 010-0199; \
                card 4111-1111-1111-1111 at https://pay.example.com/x?y=1. Host 10.0.0.1, 2001:db8::7.";
    let whole = |text: &str| {
        let mut f = guard.deltas().unwrap();
        let mut out = String::new();
        f.push(text, &mut out);
        f.finish(&mut out);
        out
    };
    let expected = whole(text);
    for secret in ["bob@", "555", "4111", "pay.example", "10.0.0.1", "db8"] {
        assert!(!expected.contains(secret), "{secret} in {expected}");
    }
    for cut in (1..text.len()).filter(|&i| text.is_char_boundary(i)) {
        let mut f = guard.deltas().unwrap();
        let mut out = String::new();
        f.push(&text[..cut], &mut out);
        f.push(&text[cut..], &mut out);
        f.finish(&mut out);
        assert_eq!(out, expected, "split at {cut}");
    }
    let mut f = guard.deltas().unwrap();
    let mut out = String::new();
    for c in text.chars() {
        f.push(&c.to_string(), &mut out);
    }
    f.finish(&mut out);
    assert_eq!(out, expected, "one character at a time");
}

#[tokio::test]
async fn a_reply_is_rewritten_before_it_is_stored_and_a_tool_calls_arguments_before_it_runs() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use RunTools;
        use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact) };
        run |env: &Env| {
            let reply = match env.messages.last() {
                Some(m) if m.role == Role::Tool => Message::assistant(format!("it said {}", m.content)),
                _ => Message::tool_calls("", vec![ToolCall::new("c1", "echo", serde_json::json!({"text": "to ann@example.com"}))]),
            };
            std::future::ready(Ok::<_, brute::Error>(reply))
        };
    };
    let outcome = agent.start("go").await.unwrap();
    let messages = outcome.env.messages.as_slice();
    // The tool ran with the redacted argument, so its result is redacted too.
    assert_eq!(
        messages[1].tool_calls[0].arguments["text"],
        "to [REDACTED_EMAIL]"
    );
    assert_eq!(messages[2].content, "to [REDACTED_EMAIL]");
    assert_eq!(outcome.text(), Some("it said to [REDACTED_EMAIL]"));
}

#[tokio::test]
async fn a_blocked_tool_call_never_runs_and_leaves_no_dangling_call() {
    let ran = Arc::new(AtomicU32::new(0));
    let counter = ran.clone();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use RunTools;
        use Guardrail { guard: PiiGuard::new().detect(Pii::Card, Action::Block).stages([Stage::ToolCall]) };
        run move |env: &Env| {
            counter.fetch_add(1, Ordering::SeqCst);
            let reply = match env.messages.last() {
                Some(m) if m.role == Role::Tool => Message::assistant("done"),
                _ => Message::tool_calls("", vec![ToolCall::new("c1", "echo", serde_json::json!({"text": "4111111111111111"}))]),
            };
            std::future::ready(Ok::<_, brute::Error>(reply))
        };
    };
    // The prompt's card is not checked: the guard watches tool calls only.
    let outcome = agent.start("pay with 4111111111111111").await.unwrap();
    assert_eq!(
        outcome.stop,
        blocked("tool_call", "a tool call contains a card number")
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let messages = outcome.env.messages.as_slice();
    assert!(messages.iter().all(|m| m.role != Role::Tool));
    assert_no_dangling_call(messages);
    assert_eq!(
        blocked_reason(messages.last().unwrap()).map(|r| r.to_string()),
        Some("Guardrail blocked the tool_call: a tool call contains a card number".into())
    );
}

/// A guard of the user's with no delta filter: it rewrites "darn" in replies.
struct Polite;

impl Guard for Polite {
    async fn check(&self, text: &str, stage: Stage) -> Check {
        match stage {
            Stage::Output if text.contains("darn") => Check::Rewrite(text.replace("darn", "d**n")),
            Stage::Output if text.contains("forbidden") => Check::Block("a forbidden word".into()),
            _ => Check::Pass,
        }
    }
}

#[tokio::test]
async fn without_a_filter_the_streamed_reply_is_held_until_checked_and_a_blocked_one_never_shown() {
    let agent = brute_agent! {
        use Guardrail { guard: Polite };
        run streaming(&["oh da", "rn it"]);
    };
    let items: Vec<TurnItem> = collect(agent.stream({
        let mut env = agent.env();
        env.messages.push(Message::user("hi"));
        env
    }))
    .await;
    assert_eq!(stream_text(&items).await, "oh d**n it");
    assert!(matches!(&items[0], TurnItem::ContentDelta { text } if text == "oh d**n it"));

    let agent = brute_agent! {
        use Guardrail { guard: Polite };
        run streaming(&["this is ", "forbidden"]);
    };
    let items: Vec<TurnItem> = collect(agent.stream({
        let mut env = agent.env();
        env.messages.push(Message::user("hi"));
        env
    }))
    .await;
    assert_eq!(stream_text(&items).await, "");
    let reply = items.iter().find_map(|i| match i {
        TurnItem::Message { message } => Some(message.content.clone()),
        _ => None,
    });
    assert_eq!(
        reply.as_deref(),
        Some("[brute] Guardrail blocked the output: a forbidden word")
    );
    assert!(
        matches!(items.last(), Some(TurnItem::End { result: TurnResult::Exited { reason } }) if reason.contains("a forbidden word"))
    );
}

/// A guard whose input check finishes only once the model call has started.
struct AfterModelStarts(Arc<tokio::sync::Notify>, bool);

impl Guard for AfterModelStarts {
    async fn check(&self, _text: &str, stage: Stage) -> Check {
        if stage != Stage::Input {
            return Check::Pass;
        }
        self.0.notified().await;
        if self.1 {
            Check::Block("not allowed".into())
        } else {
            Check::Pass
        }
    }
}

#[tokio::test]
async fn a_concurrent_input_check_runs_during_the_model_call_and_a_block_drops_the_call() {
    // Blocks: the model call, which never ends by itself, is dropped.
    let started = Arc::new(tokio::sync::Notify::new());
    let agent = {
        let started = started.clone();
        brute_agent! {
            use Guardrail { guard: AfterModelStarts(started.clone(), true), concurrent: true };
            run move |_env: &Env| {
                let started = started.clone();
                async move {
                    started.notify_one();
                    std::future::pending::<()>().await;
                    Ok::<_, brute::Error>(Message::assistant("never"))
                }
            };
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(60), agent.start("hi"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, blocked("input", "not allowed"));
    assert_eq!(outcome.env.messages.len(), 2);

    // Passes: both finish and the reply stays.
    let started = Arc::new(tokio::sync::Notify::new());
    let agent = {
        let started = started.clone();
        brute_agent! {
            use Guardrail { guard: AfterModelStarts(started.clone(), false), concurrent: true };
            run move |_env: &Env| {
                started.notify_one();
                std::future::ready(Ok::<_, brute::Error>(Message::assistant("fine")))
            };
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(60), agent.start("hi"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("fine"));
}

#[test]
fn hashes_are_keyed_and_stable_and_only_luhn_valid_numbers_are_cards() {
    let scan = |guard: &PiiGuard, text: &str| {
        let mut f = guard.deltas().unwrap();
        let mut out = String::new();
        f.push(text, &mut out);
        f.finish(&mut out);
        out
    };
    let hashed = PiiGuard::new()
        .detect(Pii::Email, Action::Hash)
        .key(*b"0123456789abcdef");
    let one = scan(&hashed, "a@example.com");
    assert_eq!(one, scan(&hashed, "a@example.com"));
    assert!(
        one.starts_with("<email:") && one.len() == "<email:>".len() + 16,
        "{one}"
    );
    // Stable across versions and machines: SipHash-2-4 under this key (checked against an
    // independent implementation).
    assert_eq!(one, "<email:1161d009d91e2ed0>");
    let other_key = PiiGuard::new()
        .detect(Pii::Email, Action::Hash)
        .key(*b"fedcba9876543210");
    assert_ne!(scan(&other_key, "a@example.com"), one);
    let cards = PiiGuard::new().detect(Pii::Card, Action::Redact);
    assert_eq!(
        scan(&cards, "4111 1111 1111 1112 and 4111 1111 1111 1111"),
        "4111 1111 1111 1112 and [REDACTED_CARD]"
    );
}

/// A session store that records the text of every message it is asked to store.
struct Recorder {
    inner: brute::session::JsonlStore,
    saved: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Recorder {
    fn record(&self, messages: &[Message]) {
        let mut log = self.saved.lock().unwrap();
        log.extend(messages.iter().map(|m| m.content.clone()));
    }
}

impl brute::session::SessionStore for Recorder {
    type Lease = <brute::session::JsonlStore as brute::session::SessionStore>::Lease;

    async fn open(
        &self,
        id: &str,
    ) -> Result<(Self::Lease, Vec<Message>), brute::session::SessionError> {
        self.inner.open(id).await
    }
    async fn append(
        &self,
        lease: &mut Self::Lease,
        messages: &[Message],
    ) -> Result<(), brute::session::SessionError> {
        self.record(messages);
        self.inner.append(lease, messages).await
    }
    async fn rewrite(
        &self,
        lease: &mut Self::Lease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), brute::session::SessionError> {
        self.record(messages);
        self.inner.rewrite(lease, from, messages).await
    }
    async fn release(&self, lease: Self::Lease) -> Result<(), brute::session::SessionError> {
        self.inner.release(lease).await
    }
    async fn load(&self, id: &str) -> Result<Vec<Message>, brute::session::SessionError> {
        self.inner.load(id).await
    }
    async fn list(&self) -> Result<Vec<String>, brute::session::SessionError> {
        self.inner.list().await
    }
    async fn delete(&self, id: &str) -> Result<(), brute::session::SessionError> {
        self.inner.delete(id).await
    }
}

#[tokio::test]
async fn a_reply_is_checked_before_it_is_ever_handed_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let saved = Arc::new(std::sync::Mutex::new(Vec::new()));
    let store = Recorder {
        inner: brute::session::JsonlStore::new(dir.path()),
        saved: saved.clone(),
    };
    let agent = brute_agent! {
        use SessionLog { store: store, session: "s" };
        use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact) };
        run |_env: &Env| std::future::ready(Ok::<_, brute::Error>(Message::assistant("write to ann@example.com")));
    };
    let outcome = agent.start("who?").await.unwrap();
    assert_eq!(outcome.text(), Some("write to [REDACTED_EMAIL]"));
    let saved = saved.lock().unwrap();
    assert_eq!(*saved, ["who?", "write to [REDACTED_EMAIL]"]);
}
