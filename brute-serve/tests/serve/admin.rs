//! The store's administration over HTTP, behind the token: sizes
//! (`GET /v1/admin/store`), retention and pruning through the server's archive
//! (`POST /v1/admin/retention`), and a session's fork and rewind, with their errors
//! in the server's one JSON shape. On JSONL and on PostgreSQL (run for real: these
//! tests fail, never skip, without it).

#![allow(clippy::unwrap_used)]

use crate::postgres_support;
use crate::support;

use std::sync::{Arc, Mutex};

use brute::session::{JsonlStore, PostgresStore, SessionStore};
use brute::{Message, ToolCall, brute_agent, middleware::SessionLog};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, client, post};

fn history() -> Vec<Message> {
    vec![
        Message::user("list the files"),
        Message::tool_calls("", vec![ToolCall::new("c1", "ls", json!({}))]),
        Message::tool_result("c1", "a.txt"),
        Message::assistant("one file"),
        Message::user("thanks"),
        Message::assistant("welcome"),
    ]
}

async fn server<S: SessionStore>(
    store: &Arc<S>,
    archive: Option<Arc<Mutex<Vec<String>>>>,
) -> Running {
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let mut server = Server::new(store.clone())
        .agent("helper", agent)
        .bearer_token(TOKEN);
    if let Some(archive) = archive {
        server = server.archive(move |session, removed| {
            let mut archive = archive.lock().unwrap();
            archive.extend(removed.iter().map(|m| format!("{session}: {}", m.content)));
            Ok(())
        });
    }
    Running::start(server).await
}

/// The status and JSON body of `POST path` with `body`.
async fn call(running: &Running, path: &str, body: Value) -> (u16, Value) {
    let response = post(&client(), format!("{}{path}", running.base), body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.text().await.unwrap()).unwrap(),
    )
}

/// The error of a body in the server's shape: its `code` and `message`.
fn error(body: &Value) -> (&str, &str) {
    let error = &body["error"];
    assert!(
        error["type"].is_string() && error.get("param").is_some(),
        "{body}"
    );
    (
        error["code"].as_str().unwrap(),
        error["message"].as_str().unwrap(),
    )
}

async fn administration<S: SessionStore>(store: Arc<S>) {
    for (id, messages) in [("a", history()), ("b", history()[4..].to_vec())] {
        let (mut lease, _) = store.open(id).await.unwrap();
        store.append(&mut lease, &messages).await.unwrap();
        store.release(lease).await.unwrap();
    }
    let archived = Arc::new(Mutex::new(Vec::new()));
    let running = server(&store, Some(archived.clone())).await;
    let http = client();

    // Behind the token.
    let response = http
        .get(format!("{}/v1/admin/store", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    error(&serde_json::from_str(&response.text().await.unwrap()).unwrap());

    // Sizes.
    let sizes = http
        .get(format!("{}/v1/admin/store", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sizes: Value = serde_json::from_str(&sizes).unwrap();
    assert_eq!(
        (sizes["sessions"].clone(), sizes["messages"].clone()),
        (json!(2), json!(8)),
        "{sizes}"
    );
    assert!(sizes["bytes"].as_u64().unwrap() > 0, "{sizes}");
    assert!(sizes["disk_bytes"].as_u64().unwrap() >= sizes["bytes"].as_u64().unwrap());
    let list: Vec<(&str, u64)> = sizes["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["messages"].as_u64().unwrap()))
        .collect();
    assert_eq!(list, [("a", 6), ("b", 2)]);
    assert!(sizes["list"][0]["updated"].as_u64().is_some(), "{sizes}");

    // Fork: a split is a 400 naming the position and the call.
    let (status, body) = call(
        &running,
        "/v1/sessions/a/fork",
        json!({ "at": 2, "to": "a2" }),
    )
    .await;
    assert_eq!(status, 400);
    let (code, message) = error(&body);
    assert_eq!(code, "invalid_position");
    assert!(
        message.contains("position 2") && message.contains("`c1`"),
        "{message}"
    );
    let (status, body) = call(
        &running,
        "/v1/sessions/a/fork",
        json!({ "at": 4, "to": "a2" }),
    )
    .await;
    assert_eq!(
        (status, &body),
        (201, &json!({ "id": "a2", "from": "a", "messages": 4 }))
    );
    assert_eq!(store.load("a2").await.unwrap(), history()[..4]);
    let (status, body) = call(
        &running,
        "/v1/sessions/a/fork",
        json!({ "at": 4, "to": "a2" }),
    )
    .await;
    assert_eq!((status, error(&body).0), (409, "exists"));
    let (status, body) = call(&running, "/v1/sessions/a/fork", json!({ "at": 6 })).await;
    assert_eq!(status, 201);
    let fresh = body["id"].as_str().unwrap();
    assert!(fresh.starts_with("fork-"), "{body}");
    assert_eq!(store.load(fresh).await.unwrap(), history());
    let (status, body) = call(&running, "/v1/sessions/a/fork", json!({ "at": "x" })).await;
    assert_eq!((status, error(&body).0), (400, "invalid_request"));
    let (status, body) = call(
        &running,
        "/v1/sessions/a/fork",
        json!({ "at": 1, "to": ".x" }),
    )
    .await;
    assert_eq!((status, error(&body).0), (400, "invalid_request"));

    // Rewind: refused while a turn holds the session, then cut.
    let (held, _) = store.open("a").await.unwrap();
    let (status, body) = call(&running, "/v1/sessions/a/rewind", json!({ "to": 4 })).await;
    assert_eq!((status, error(&body).0), (409, "busy"));
    store.release(held).await.unwrap();
    let (status, body) = call(&running, "/v1/sessions/a/rewind", json!({ "to": 2 })).await;
    assert_eq!((status, error(&body).0), (400, "invalid_position"));
    let (status, body) = call(&running, "/v1/sessions/a/rewind", json!({ "to": 4 })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["removed"].as_array().unwrap().len(), 2);
    assert_eq!(store.load("a").await.unwrap(), history()[..4]);

    // Prune through the archive: it sees what goes.
    let (status, body) = call(&running, "/v1/admin/retention", json!({ "prune_to": 2 })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pruned"], json!({ fresh: 4 }), "{body}");
    assert_eq!(
        *archived.lock().unwrap(),
        ["list the files", "", "a.txt", "one file"].map(|m| format!("{fresh}: {m}"))
    );
    assert_eq!(store.load(fresh).await.unwrap(), history()[4..]);

    // Retention by count: the newest session stays; a held one is skipped.
    let (held, _) = store.open("a2").await.unwrap();
    let (status, body) = call(
        &running,
        "/v1/admin/retention",
        json!({ "max_sessions": 0 }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["skipped"], json!(["a2"]), "{body}");
    assert_eq!(body["kept"], json!(1), "{body}");
    assert_eq!(body["deleted"].as_array().unwrap().len(), 3, "{body}");
    store.release(held).await.unwrap();
    assert_eq!(store.list().await.unwrap(), ["a2"]);
    let (status, body) = call(&running, "/v1/admin/retention", json!({ "max_days": 1 })).await;
    assert_eq!((status, error(&body).0), (400, "invalid_request"));

    // A server without an archive prunes only when told to discard.
    let (mut lease, _) = store.open("a2").await.unwrap();
    let more = [Message::user("more"), Message::assistant("ok")];
    store.append(&mut lease, &more).await.unwrap();
    store.release(lease).await.unwrap();
    let bare = server(&store, None).await;
    let (status, body) = call(&bare, "/v1/admin/retention", json!({ "prune_to": 2 })).await;
    assert_eq!(status, 400);
    assert!(error(&body).1.contains("discard"), "{body}");
    assert_eq!(store.load("a2").await.unwrap().len(), 6);
    let (status, body) = call(
        &bare,
        "/v1/admin/retention",
        json!({ "prune_to": 2, "discard": true }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({ "deleted": [], "skipped": [], "kept": 1, "pruned": { "a2": 4 }, "busy": [] })
    );
    assert_eq!(store.load("a2").await.unwrap(), more);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_endpoints_on_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    administration(Arc::new(JsonlStore::new(dir.path()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn the_admin_endpoints_on_postgres() {
    let url = postgres_support::postgres_database("admin");
    administration(Arc::new(PostgresStore::connect(&url).await.unwrap())).await;
}
