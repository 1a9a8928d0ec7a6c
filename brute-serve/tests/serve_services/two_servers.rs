//! Two server processes' worth of state on one PostgreSQL: two servers, each with its
//! own connection to the database and nothing else in common, serve the same
//! sessions. A client alternates between them turn by turn; each turn sees the whole
//! conversation, a turn running on one server makes the other answer 409, and a
//! session deleted through one is gone from the other.

#![allow(clippy::unwrap_used)]

use crate::postgres_support;
use crate::support;

use std::sync::Arc;

use brute::session::PostgresStore;
use brute::{Env, Message, Role, brute_agent, middleware::SessionLog};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};
use tokio::sync::Semaphore;

/// How many user messages the conversation holds; a turn of "slow" waits for a
/// permit of the gate.
fn count(env: &Env) -> (usize, bool) {
    let users = env.messages.iter().filter(|m| m.role == Role::User).count();
    let slow = env.messages.last().is_some_and(|m| m.content == "slow");
    (users, slow)
}

async fn start(url: &str, name: &'static str, gate: Arc<Semaphore>) -> Running {
    let store = Arc::new(PostgresStore::connect(url).await.unwrap());
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run move |env: &Env| {
            let (users, slow) = count(env);
            let gate = gate.clone();
            async move {
                if slow {
                    gate.acquire().await.unwrap().forget();
                }
                Ok(Message::assistant(format!("{name}: {users} prompts")))
            }
        };
    };
    Running::start(
        Server::new(store)
            .agent("counter", agent)
            .bearer_token(TOKEN),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_alternating_between_two_servers_sees_one_conversation() {
    let _no_scale_run = crate::ALONE.read().await;
    let url = postgres_support::postgres_database("two_servers");
    let gate = Arc::new(Semaphore::new(0));
    let servers = [
        start(&url, "a", gate.clone()).await,
        start(&url, "b", gate.clone()).await,
    ];
    let client = support::client();
    for turn in 0..6 {
        let server = &servers[turn % 2];
        let url = format!("{}/v1/sessions/shared/turns", server.base);
        let body = post(&client, url, json!({ "input": format!("turn {turn}") }))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let expected = format!("{}: {} prompts", ["a", "b"][turn % 2], turn + 1);
        assert_eq!(
            events(&body).pop().unwrap().1["result"]["text"],
            expected.as_str(),
            "{body}"
        );
    }
    let auth = format!("Bearer {TOKEN}");
    for server in &servers {
        let history: Value = serde_json::from_str(
            &client
                .get(format!("{}/v1/sessions/shared", server.base))
                .header("authorization", &auth)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            history["messages"].as_array().unwrap().len(),
            12,
            "{history}"
        );
    }

    // A turn on a: b answers 409 for the session until it ends.
    let slow = post(
        &client,
        format!("{}/v1/sessions/shared/turns", servers[0].base),
        json!({ "input": "slow" }),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(slow.status(), 200);
    let busy = post(
        &client,
        format!("{}/v1/sessions/shared/turns", servers[1].base),
        json!({ "input": "now" }),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(busy.status(), 409);
    gate.add_permits(1);
    assert_eq!(
        events(&slow.text().await.unwrap()).pop().unwrap().1["result"]["text"],
        "a: 7 prompts"
    );

    let deleted = client
        .delete(format!("{}/v1/sessions/shared", servers[1].base))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = client
        .get(format!("{}/v1/sessions/shared", servers[0].base))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    for server in &servers {
        let ready = client
            .get(format!("{}/readyz", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200);
    }
}
