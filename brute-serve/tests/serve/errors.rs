//! Bad input gets a 4xx with a JSON body in one shape, `{"error": {"message", "type",
//! "param", "code"}}`, on every route and for the errors axum answers itself (404, 405,
//! 413, 415); a bad session id is a 400 that states the rule and shows no path; the
//! bearer scheme is case-insensitive; `GET /v1/models` lists the agents under the
//! names `/v1/chat/completions` takes.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use brute::session::JsonlStore;
use brute::{Message, brute_agent, middleware::SessionLog};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, post};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start(body_limit: usize) -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let other = brute_agent! { run |_env| async { Ok(Message::assistant("other")) }; };
    let server = Server::new(store)
        .agent("helper", agent)
        .agent("another", other)
        .bearer_token(TOKEN)
        .body_limit(body_limit);
    (Running::start(server).await, dir)
}

/// Sends `METHOD path` byte for byte (no client normalises `..` or decodes `%2F`),
/// with the tests' token; the status and the body.
async fn raw(running: &Running, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut tcp = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tcp.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// The error object of a body in the documented shape, with its four fields.
fn error_of(body: &str) -> Value {
    let value: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    let error = value["error"].clone();
    for field in ["message", "type", "param", "code"] {
        assert!(error.get(field).is_some(), "no `{field}` in {body}");
    }
    assert!(
        error["message"].is_string() && error["type"].is_string(),
        "{body}"
    );
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_session_id_is_a_400_that_states_the_rule_and_shows_no_path() {
    let (running, dir) = start(1 << 20).await;
    let long = "x".repeat(300);
    let store_dir = dir.path().to_str().unwrap().to_owned();
    for id in ["..", "..%2Fx", ".hidden", "a%5Cb", "a%00b", &long] {
        for (method, path, body) in [
            ("GET", format!("/v1/sessions/{id}"), ""),
            ("DELETE", format!("/v1/sessions/{id}"), ""),
            (
                "POST",
                format!("/v1/sessions/{id}/turns"),
                r#"{"input":"hi"}"#,
            ),
            (
                "POST",
                format!("/v1/sessions/{id}/approvals/c1"),
                r#"{"decision":"approve"}"#,
            ),
        ] {
            let (status, text) = raw(&running, method, &path, body).await;
            assert_eq!(status, 400, "{method} {path}: {text}");
            let error = error_of(&text);
            let message = error["message"].as_str().unwrap();
            assert_eq!(error["type"], "invalid_request", "{text}");
            assert!(
                message.contains("1 to 128 bytes"),
                "{method} {path}: {message}"
            );
            assert!(!message.contains(&store_dir), "{method} {path}: {message}");
            assert!(!message.contains(".jsonl"), "{method} {path}: {message}");
        }
    }
    // A good id still reaches the store.
    let (status, text) = raw(&running, "GET", "/v1/sessions/nobody", "").await;
    assert_eq!(status, 404, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_axum_answers_itself_has_the_json_shape() {
    let (running, _dir) = start(64).await;
    let client = support::client();
    let auth = format!("Bearer {TOKEN}");

    // 404: an unknown route, inside /v1 and outside it.
    for path in ["/v1/nothing", "/nothing"] {
        let response = client
            .get(format!("{}{path}", running.base))
            .header("authorization", &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let error = error_of(&response.text().await.unwrap());
        assert_eq!(error["type"], "not_found");
        assert!(error["message"].as_str().unwrap().contains(path), "{error}");
    }

    // 405: a route that takes another method; `Allow` stays.
    let response = client
        .get(format!("{}/v1/chat/completions", running.base))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert!(response.headers().get("allow").is_some());
    let error = error_of(&response.text().await.unwrap());
    assert_eq!(error["type"], "method_not_allowed");

    // 413: a body over the limit (64 bytes here).
    let big = json!({ "input": "x".repeat(200) });
    let response = post(
        &client,
        format!("{}/v1/sessions/s/turns", running.base),
        big,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 413);
    let error = error_of(&response.text().await.unwrap());
    assert_eq!(error["type"], "body_too_large");

    // 415: a body that says it is not JSON.
    let response = client
        .post(format!("{}/v1/sessions/s/turns", running.base))
        .header("authorization", &auth)
        .header("content-type", "text/plain")
        .body(r#"{"input":"hi"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let error = error_of(&response.text().await.unwrap());
    assert_eq!(error["type"], "unsupported_media_type");

    // 401 keeps its shape and its challenge.
    let response = client
        .get(format!("{}/v1/agents", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().get("www-authenticate").is_some());
    error_of(&response.text().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_a_json_object_is_a_400() {
    let (running, _dir) = start(1 << 20).await;
    let client = support::client();
    // An array would fill the fields in order; a string or a number is no request.
    for body in [json!(["hi"]), json!(["helper", []]), json!("hi"), json!(3)] {
        for path in ["/v1/sessions/s/turns", "/v1/chat/completions"] {
            let response = post(&client, format!("{}{path}", running.base), body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 400, "{path} {body}");
            let error = error_of(&response.text().await.unwrap());
            assert!(
                error["message"].as_str().unwrap().contains("JSON object"),
                "{error}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_is_case_insensitive() {
    let (running, _dir) = start(1 << 20).await;
    let client = support::client();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let response = client
            .get(format!("{}/v1/agents", running.base))
            .header("authorization", format!("{scheme} {TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
    }
    let response = client
        .get(format!("{}/v1/agents", running.base))
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_are_the_agents_that_chat_completions_takes() {
    let (running, _dir) = start(1 << 20).await;
    let client = support::client();
    let auth = format!("Bearer {TOKEN}");
    let list: Value = client
        .get(format!("{}/v1/models", running.base))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap();
    assert_eq!(list["object"], "list", "{list}");
    let data = list["data"].as_array().unwrap();
    let ids: Vec<&str> = data.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["helper", "another"], "the default first: {list}");
    for model in data {
        assert_eq!(model["object"], "model");
        assert!(model["created"].as_u64().unwrap() > 0, "{model}");
        assert!(model["owned_by"].is_string(), "{model}");

        // Each id is a model that chat completions runs.
        let id = model["id"].as_str().unwrap();
        let body = json!({ "model": id, "messages": [{"role": "user", "content": "hi"}] });
        let response = post(
            &client,
            format!("{}/v1/chat/completions", running.base),
            body,
        )
        .send()
        .await
        .unwrap();
        assert_eq!(response.status(), 200, "{id}");
        let completion: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(completion["model"], id);

        // And `GET /v1/models/{id}` answers the same object.
        let one: Value = client
            .get(format!("{}/v1/models/{id}", running.base))
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap();
        assert_eq!(&one, model);
    }

    let response = client
        .get(format!("{}/v1/models/gpt-nothing", running.base))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let error = error_of(&response.text().await.unwrap());
    assert_eq!(error["type"], "not_found");
    assert!(
        error["message"].as_str().unwrap().contains("gpt-nothing"),
        "{error}"
    );

    // The models need the token like every /v1 route.
    let response = client
        .get(format!("{}/v1/models", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}
