//! The web chat at `/`, driven in a real headless chromium through chromedriver: type
//! a prompt, see the streamed reply, approve a tool call, see its result. Fails when
//! chromium or chromedriver is missing (`cargo xtask test` installs them): it never skips.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::support;
use crate::webdriver;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use brute::session::JsonlStore;
use brute::tools::{Approval, DefaultToolPipeline, ToolContext, ToolError};
use brute::{
    Completion, Env, Event, Message, Model, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
};
use brute_serve::Server;
use serde_json::json;
use support::{Running, TOKEN};

/// Launches a rocket: appends a line to `launches.log` in the tool root.
#[brute::tool]
async fn launch(
    /// Where to.
    target: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    let path = cx.sandbox().root().join("launches.log");
    std::fs::write(&path, format!("{target}\n")).map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(format!("launched to {target}"))
}

/// Streams each reply in three deltas, 50 ms apart.
async fn streamed(env: &Env, text: &str) {
    let third = text.len() / 3;
    for part in [&text[..third], &text[third..2 * third], &text[2 * third..]] {
        tokio::time::sleep(Duration::from_millis(50)).await;
        env.emit(Event::ContentDelta(part));
    }
}

/// Asks to launch to the moon, then reports the result; every reply streamed.
struct Launcher;

impl Model for Launcher {
    async fn complete(&self, env: &Env) -> Result<Completion, brute::Error> {
        Ok(match env.messages.last() {
            Some(m) if m.role == Role::User => {
                let text = "Preparing the launch to the moon.";
                streamed(env, text).await;
                Message::tool_calls(
                    text,
                    vec![ToolCall::new("c1", "launch", json!({ "target": "moon" }))],
                )
            }
            Some(m) => {
                let text = format!("Done: {}.", m.content);
                streamed(env, &text).await;
                Message::assistant(text)
            }
            None => Message::assistant("nothing"),
        }
        .into())
    }
}

fn server(dir: &Path) -> Server {
    let store = Arc::new(JsonlStore::new(dir.join("sessions")));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Launch,), root: dir, approval: Approval::ask(["launch"]) };
        run Launcher;
    };
    Server::new(store)
        .agent("launcher", agent)
        .bearer_token(TOKEN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_chat_streams_a_reply_and_approves_a_tool_call() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path())).await;
    let driver = webdriver::Driver::start().await;
    let browser = driver.browser().await;
    browser.goto(&format!("{}/", running.base)).await;

    browser.type_into("#token", TOKEN).await;
    browser
        .type_into("#prompt", "Launch a rocket, please.")
        .await; // leaving #token fires its change
    browser
        .wait_for(
            "the agent list",
            "return document.querySelector('#agent').value === 'launcher'",
        )
        .await;
    browser.click("#send").await;

    let reply = browser
        .wait_for(
            "the streamed reply",
            "const b = document.querySelector('.assistant'); return b && b.dataset.deltas === '3' ? b.textContent : null",
        )
        .await;
    assert_eq!(reply, "Preparing the launch to the moon.");
    browser
        .wait_for(
            "the approve button",
            "return !!document.querySelector('.tool .approval button.approve')",
        )
        .await;
    let status = browser.wait_for("the paused status", "const s = document.querySelector('#status').textContent; return s.startsWith('paused') ? s : null").await;
    assert_eq!(status, "paused: waiting for approval");
    assert!(
        !dir.path().join("launches.log").exists(),
        "nothing runs before approval"
    );

    // A reload shows the stored conversation, the waiting call with its buttons.
    browser.goto(&format!("{}/", running.base)).await;
    browser
        .wait_for(
            "the waiting call after a reload",
            "return !!document.querySelector('.tool .approval button.approve') && document.querySelectorAll('.user').length === 1",
        )
        .await;

    browser.click(".tool .approval button.approve").await;
    let result = browser
        .wait_for("the tool result", "const r = document.querySelector('.tool .tool-result'); return r ? r.textContent : null")
        .await;
    assert_eq!(result, "→ launched to moon");
    let answer = browser
        .wait_for(
            "the final reply",
            "const b = [...document.querySelectorAll('.assistant')]; return b.length === 2 && b[1].dataset.deltas === '3' && document.querySelector('#status').textContent === 'completed' ? b[1].textContent : null",
        )
        .await;
    assert_eq!(answer, "Done: launched to moon.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("launches.log")).unwrap(),
        "moon\n"
    );
    assert!(
        browser
            .eval("return document.querySelector('.tool .approval')")
            .await
            .is_null(),
        "the buttons are gone"
    );
    browser.close().await;
}

/// Answers `echo: <the prompt>`, streamed.
struct Echo;

impl Model for Echo {
    async fn complete(&self, env: &Env) -> Result<Completion, brute::Error> {
        let last = env.messages.last().map_or("", |m| m.content.as_str());
        let text = format!("echo: {last}");
        streamed(env, &text).await;
        Ok(Message::assistant(text).into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_chat_forks_a_session_from_a_message() {
    let _no_scale_run = crate::ALONE.read().await;
    use brute::session::SessionStore;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path().join("sessions")));
    let stored = [
        Message::user("one"),
        Message::assistant("echo: one"),
        Message::user("two"),
        Message::assistant("echo: two"),
    ];
    let (mut lease, _) = store.open("trip").await.unwrap();
    store.append(&mut lease, &stored).await.unwrap();
    store.release(lease).await.unwrap();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run Echo;
    };
    let running = Running::start(
        Server::new(store.clone())
            .agent("echo", agent)
            .bearer_token(TOKEN),
    )
    .await;
    let driver = webdriver::Driver::start().await;
    let browser = driver.browser().await;
    browser.goto(&format!("{}/", running.base)).await;
    browser.type_into("#token", TOKEN).await;
    browser
        .eval("const s = document.querySelector('#session'); s.value = 'trip'; s.dispatchEvent(new Event('change')); return true")
        .await;

    // A button per message: before each prompt, after each reply.
    let positions = browser
        .wait_for(
            "the fork buttons",
            "const b = [...document.querySelectorAll('button.fork')]; return b.length === 4 ? b.map((b) => b.dataset.at).join(',') : null",
        )
        .await;
    assert_eq!(positions, "0,2,2,4");

    // Fork after the first reply: a new session with the first two messages.
    browser.click(".assistant + button.fork").await;
    let status = browser
        .wait_for(
            "the forked session",
            "const s = document.querySelector('#status').textContent; return s.startsWith('forked') && document.querySelectorAll('.user').length === 1 && document.querySelectorAll('button.fork').length === 2 ? s : null",
        )
        .await;
    let forked = browser
        .eval("return document.querySelector('#session').value")
        .await;
    let forked = forked.as_str().unwrap().to_owned();
    assert_ne!(forked, "trip");
    assert_eq!(
        status,
        format!("forked trip at message 2 into {forked}").as_str()
    );
    assert_eq!(store.load(&forked).await.unwrap(), stored[..2]);
    assert_eq!(
        store.load("trip").await.unwrap(),
        stored,
        "the original stays"
    );

    // The fork goes its own way, and what the turn added gets its buttons.
    browser.type_into("#prompt", "three").await;
    browser.click("#send").await;
    browser
        .wait_for(
            "the reply in the fork",
            "return document.querySelector('#status').textContent === 'completed' && document.querySelectorAll('button.fork').length === 4",
        )
        .await;
    let texts: Vec<String> = store
        .load(&forked)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(texts, ["one", "echo: one", "three", "echo: three"]);
    assert_eq!(store.load("trip").await.unwrap(), stored);
    browser.close().await;
}
