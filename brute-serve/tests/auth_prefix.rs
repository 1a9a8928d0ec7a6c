//! A bearer token must match in full: a running server refuses every token that is
//! a prefix of the real one (down to the empty token), the real one with anything
//! added, and the real one in another case, on every API route.

#![allow(clippy::unwrap_used)]

mod support;

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
