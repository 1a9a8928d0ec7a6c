//! A bearer token must match in full: a running server refuses every token that is
//! a prefix of the real one (down to the empty token), the real one with anything
//! added, in another case, or with two bytes changed, on every API route; and each of
//! several tokens opens it, even one configured twice.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use brute::brute_agent;
use brute::session::JsonlStore;
use brute_serve::Server;
use support::{Running, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_of_the_token_is_refused_by_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! { run |_env| async { Ok(brute::Message::assistant("hi")) }; };
    let running = Running::start(Server::new(store).agent("a", agent).bearer_token(TOKEN)).await;
    let client = support::client();
    let url = format!("{}/v1/agents", running.base);

    // The real token opens the route: the refusals below are about the token.
    let real = client
        .get(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(real.status(), 200);

    let mut wrong: Vec<String> = (0..TOKEN.len()).map(|n| TOKEN[..n].to_string()).collect();
    wrong.push(format!("{TOKEN}x"));
    wrong.push(TOKEN.to_uppercase());
    // Same length, two bytes changed by the same bit: their differences cancel out
    // in an XOR of all differences, so only a comparison of every byte refuses it.
    let mut flipped = TOKEN.as_bytes().to_vec();
    flipped[0] ^= 1;
    flipped[1] ^= 1;
    wrong.push(String::from_utf8(flipped).unwrap());
    for token in &wrong {
        for (method, path) in [
            ("GET", "/v1/agents"),
            ("POST", "/v1/sessions/x/turns"),
            ("GET", "/v1/sessions/x"),
        ] {
            let method: reqwest::Method = method.parse().unwrap();
            let response = client
                .request(method.clone(), format!("{}{path}", running.base))
                .header("authorization", format!("Bearer {token}"))
                .send()
                .await
                .unwrap();
            assert_eq!(
                response.status(),
                401,
                "{method} {path} with the token {token:?} (the real one is {TOKEN:?})"
            );
        }
    }
}

/// A server given several tokens (one of them twice, as a configuration that adds
/// tokens from two sources may) opens to each of them and to nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_several_tokens_opens_even_one_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! { run |_env| async { Ok(brute::Message::assistant("hi")) }; };
    let server = Server::new(store)
        .agent("a", agent)
        .bearer_token(TOKEN)
        .bearer_token("second-token")
        .bearer_token(TOKEN);
    let running = Running::start(server).await;
    let client = support::client();
    let url = format!("{}/v1/agents", running.base);
    for (token, status) in [
        (TOKEN, 200),
        ("second-token", 200),
        ("second-toke", 401),
        ("other", 401),
    ] {
        let response = client
            .get(&url)
            .header("authorization", format!("Bearer {token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "the token {token:?}");
    }
}
