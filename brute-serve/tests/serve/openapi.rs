//! The OpenAPI description at `GET /openapi.json` is public, is OpenAPI 3.1, names
//! every route the server mounts, and holds: schemathesis (from PyPI, installed by
//! `cargo xtask test` into `.ci/venv`) runs all its checks against a server on
//! 127.0.0.1 and finds nothing (no 5xx, no status, content type, header or body that
//! the description lacks, no valid request refused and no invalid one accepted).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brute::session::JsonlStore;
use brute::{Message, brute_agent, middleware::SessionLog};
use brute_serve::Server;
use serde_json::Value;
use support::{Running, TOKEN};

/// A server with a store in a temp dir, and two agents that answer without a model.
async fn start() -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env| async { Ok(Message::assistant("hello")) };
    };
    let other = brute_agent! { run |_env| async { Ok(Message::assistant("other")) }; };
    let server = Server::new(store)
        .agent("helper", agent)
        .agent("another", other)
        .bearer_token(TOKEN);
    (Running::start(server).await, dir)
}

/// `schemathesis`'s command line in `.ci/venv`, or the command that installs it.
fn schemathesis() -> PathBuf {
    let st = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/st");
    let runs = std::process::Command::new(&st)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        runs,
        "schemathesis is missing from .ci/venv ({}): run `cargo xtask setup` (or `cargo xtask test`)",
        st.display()
    );
    st
}

/// Every route the server mounts, as the description must name it (method, path).
const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/sessions/{id}/turns"),
    ("post", "/v1/sessions/{id}/approvals/{call_id}"),
    ("get", "/v1/sessions/{id}"),
    ("delete", "/v1/sessions/{id}"),
    ("post", "/v1/sessions/{id}/fork"),
    ("post", "/v1/sessions/{id}/rewind"),
    ("get", "/v1/admin/store"),
    ("post", "/v1/admin/retention"),
    ("post", "/v1/chat/completions"),
    ("get", "/v1/agents"),
    ("get", "/v1/models"),
    ("get", "/v1/models/{id}"),
    ("get", "/.well-known/agent-card.json"),
    ("get", "/a2a/{agent}/.well-known/agent-card.json"),
    ("post", "/a2a"),
    ("post", "/a2a/{agent}"),
    ("post", "/a2a-rest/message:send"),
    ("post", "/a2a-rest/message:stream"),
    ("post", "/a2a-rest/{agent}/message:send"),
    ("post", "/a2a-rest/{agent}/message:stream"),
    ("get", "/a2a-rest/tasks/{id}"),
    ("post", "/a2a-rest/tasks/{id}:cancel"),
    ("get", "/a2a-rest/{agent}/tasks/{id}"),
    ("post", "/a2a-rest/{agent}/tasks/{id}:cancel"),
    ("post", "/agui"),
    ("post", "/agui/{agent}"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/"),
    ("get", "/openapi.json"),
];

/// The paths of every `.route("..")` in the server's sources: what it mounts, read
/// from the code, so that a route added without a description fails here.
fn mounted_routes() -> Vec<String> {
    let mut files = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut routes = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices(".route(") {
            let rest = text[at + ".route(".len()..].trim_start();
            if let Some(quoted) = rest.strip_prefix('"')
                && let Some(end) = quoted.find('"')
            {
                routes.push(quoted[..end].to_owned());
            }
        }
    }
    assert!(
        routes.len() >= 20,
        "read only {} routes from the sources: {routes:?}",
        routes.len()
    );
    routes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_description_is_public_openapi_3_1_and_names_every_route() {
    let (running, _dir) = start().await;
    let response = support::client()
        .get(format!("{}/openapi.json", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let description: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(description["openapi"], "3.1.0");
    let paths = description["paths"].as_object().unwrap();
    for (method, path) in ROUTES {
        assert!(
            paths
                .get(*path)
                .and_then(|item| item.get(*method))
                .is_some(),
            "the description lacks `{method} {path}`"
        );
    }
    let documented: usize = paths
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(
        documented,
        ROUTES.len(),
        "the description names routes this test does not know: {:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for route in mounted_routes() {
        // `{*id}` is axum's catch-all; one route serves `tasks/{id}` and
        // `tasks/{id}:cancel`, which the description names apart.
        let route = route.replace("{*", "{");
        assert!(
            paths.keys().any(|p| *p == route
                || p.strip_prefix(route.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))),
            "the server mounts `{route}` but the description lacks it: give its handler \
             `#[utoipa::path]` and name it in `paths(..)` of brute-serve/src/openapi.rs"
        );
    }
    let error = &description["components"]["schemas"]["Error"];
    assert!(error["properties"]["error"].is_object(), "{error}");
}

/// The integer schemas a request can carry (bodies and parameters, `$ref`s followed),
/// each with where it is.
fn request_integers(description: &Value) -> Vec<(String, Value)> {
    fn walk(
        node: &Value,
        at: &str,
        description: &Value,
        seen: &mut Vec<String>,
        out: &mut Vec<(String, Value)>,
    ) {
        match node {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    if seen.contains(target) {
                        return;
                    }
                    seen.push(target.clone());
                    let name = target.trim_start_matches("#/components/schemas/");
                    let schema = &description["components"]["schemas"][name];
                    walk(schema, name, description, seen, out);
                    seen.pop();
                    return;
                }
                let integer = match map.get("type") {
                    Some(Value::String(t)) => t == "integer",
                    Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
                    _ => false,
                };
                if integer {
                    out.push((at.to_owned(), node.clone()));
                }
                for (key, value) in map {
                    walk(value, &format!("{at}.{key}"), description, seen, out);
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, at, description, seen, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (path, item) in description["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let at = format!("{method} {path}");
            for part in ["parameters", "requestBody"] {
                walk(
                    &operation[part],
                    &at,
                    description,
                    &mut Vec::new(),
                    &mut out,
                );
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_and_roles_are_taken_as_the_description_states_them() {
    let (running, _dir) = start().await;
    let client = support::client();
    let description: Value = client
        .get(format!("{}/openapi.json", running.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    // Every integer of a request states its range: what `brute-serve`'s `whole` takes.
    let integers = request_integers(&description);
    for (at, schema) in &integers {
        assert_eq!(schema["minimum"], 0, "{at}: {schema}");
        assert_eq!(
            schema["maximum"].as_f64(),
            Some(9_007_199_254_740_991.0),
            "{at}: {schema}"
        );
    }
    let places: Vec<&str> = integers.iter().map(|(at, _)| at.as_str()).collect();
    for name in [
        "RetentionRequest",
        "ForkRequest",
        "RewindRequest",
        "A2aSendConfiguration",
        "get /a2a-rest/tasks/{id}",
    ] {
        assert!(
            places.iter().any(|p| p.starts_with(name)),
            "no integer of {name}: {places:?}"
        );
    }
    let role = &description["components"]["schemas"]["AguiMessage"]["properties"]["role"];
    assert_eq!(
        role["pattern"], "^(user|assistant|system|developer|tool|activity|reasoning)$",
        "{role}"
    );

    let send = |path: &str, body: Value| {
        support::post(&client, format!("{}{path}", running.base), body).send()
    };
    let status = |path: &'static str, body: Value| {
        let request = send(path, body.clone());
        async move {
            let response = request.await.unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            (status, text, body)
        }
    };
    // A turn, so that a session exists to fork and rewind.
    let (code, text, _) = status("/v1/sessions/s/turns", serde_json::json!({"input": "hi"})).await;
    assert_eq!(code, 200, "{text}");
    let range = "from 0 to 9007199254740991";
    let thirty = "123456789012345678901234567890";
    for (path, good, bad) in [
        (
            "/v1/admin/retention",
            r#"{"max_age_secs": 100000.0}"#,
            vec![
                r#"{"max_age_secs": 2.5}"#.to_owned(),
                format!(r#"{{"max_sessions": {thirty}}}"#),
                r#"{"prune_to": -1}"#.to_owned(),
            ],
        ),
        (
            "/v1/sessions/s/fork",
            r#"{"at": 2.0, "to": "t"}"#,
            vec![
                format!(r#"{{"at": {thirty}}}"#),
                r#"{"at": 9007199254740992}"#.to_owned(),
            ],
        ),
        (
            "/v1/sessions/s/rewind",
            r#"{"to": 2.0}"#,
            vec![
                format!(r#"{{"to": {thirty}}}"#),
                r#"{"to": 1.5}"#.to_owned(),
            ],
        ),
    ] {
        let (code, text, _) = status(path, good.parse().unwrap()).await;
        assert!((200..300).contains(&code), "{path} {good}: {code} {text}");
        for bad in bad {
            let (code, text, _) = status(path, bad.parse().unwrap()).await;
            assert_eq!(code, 400, "{path} {bad}: {text}");
            assert!(text.contains(range), "{path} {bad}: {text}");
        }
    }
    // A2A's `historyLength`, in a body and in a query.
    let (code, text, _) = status(
        "/a2a-rest/message:send",
        serde_json::json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "ctx"},
            "configuration": {"historyLength": 1.0},
        }),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let task: Value = text.parse().unwrap();
    assert_eq!(
        task["task"]["history"].as_array().map(Vec::len),
        Some(1),
        "{text}"
    );
    for (query, want) in [
        ("2.0", 200),
        ("2", 200),
        ("2.5", 400),
        (thirty, 400),
        ("-1", 400),
    ] {
        let response = client
            .get(format!(
                "{}/a2a-rest/tasks/ctx:0?historyLength={query}",
                running.base
            ))
            .header("authorization", format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap();
        let code = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(code, want, "historyLength={query}: {text}");
    }
    // An AG-UI message of no known role, anywhere in the thread, is a 400 naming it.
    for role in ["", "robot"] {
        let (code, text, _) = status(
            "/agui/helper",
            serde_json::json!({
                "threadId": "t", "runId": "r", "state": {}, "context": [], "forwardedProps": {}, "tools": [],
                "messages": [{"id": "a", "role": role, "content": "x"}, {"id": "u", "role": "user", "content": "hi"}],
            }),
        )
        .await;
        assert_eq!(code, 400, "role {role:?}: {text}");
        assert!(text.contains("unknown role"), "{text}");
    }
}

/// Five rules a request's schema cannot state, each a 4xx that `positive_data_acceptance` is
/// told to expect on its routes only (every other check, and every other route, runs
/// as schemathesis ships it):
/// - an AG-UI run's *last* message must be the user's new input (a schema says what
///   every item is, or that one is, not which one comes last);
/// - an A2A message on an existing task must fit the task's state and context: A2A
///   v1.0 (5.4) answers a message on an ended task `UNSUPPORTED_OPERATION` and one
///   whose `contextId` is not the task's `INVALID_PARAMS`, both 400, and which tasks
///   have ended is the server's state, not the request's shape (the stateful phase
///   sends the ids of tasks it made);
/// - a retention request that prunes (`prune_to`) needs an archive unless it says
///   `"discard": true`, and whether the server has one is its configuration, not the
///   request's shape;
/// - a fork's or a rewind's position must lie within the stored session and not between
///   a tool call and its result (`invalid_position`), which is the session's state;
/// - an `Idempotency-Key` already used with another input is a 422
///   (`idempotency_key_reused`) on turns and decisions, which is the session's state
///   (the fuzzer sends one key with many bodies).
const CONFIG: &str = r#"
[[operations]]
include-path-regex = "^/v1/sessions/[^/]+/(turns|approvals/[^/]+)$"

[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]

[[operations]]
include-path-regex = "^/agui"

[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[[operations]]
include-path-regex = "^/a2a-rest/.*message:(send|stream)$"

[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[[operations]]
include-path-regex = "^/v1/admin/retention$"

[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[[operations]]
include-path-regex = "^/v1/sessions/[^/]+/(fork|rewind)$"

[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs schemathesis: cargo xtask test"
)]
async fn schemathesis_with_all_its_checks_finds_nothing() {
    let st = schemathesis();
    let (running, _dir) = start().await;
    let work = tempfile::tempdir().unwrap();
    // A fixed seed, so that a finding is the same on the next run; BRUTE_OPENAPI_SEED
    // draws other cases.
    let seed = std::env::var("BRUTE_OPENAPI_SEED").unwrap_or_else(|_| "1".to_owned());
    let config = work.path().join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let output = tokio::process::Command::new(&st)
        .current_dir(work.path())
        .env("NO_COLOR", "1")
        .arg("--config-file")
        .arg(&config)
        .args([
            "run",
            &format!("{}/openapi.json", running.base),
            "--checks",
            "all",
            "--max-examples",
            "15",
            "--seed",
            &seed,
            "--generation-database",
            "none",
            // Strings in ASCII: the description's `maxLength` of a session id counts
            // characters where the server counts bytes (the description says so).
            "--generation-codec",
            "ascii",
            "--request-timeout",
            "20",
            "--no-color",
            "--header",
            &format!("Authorization: Bearer {TOKEN}"),
        ])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Shown with `--nocapture`: how many cases ran, per phase.
    println!("{stdout}");
    assert!(
        output.status.success(),
        "schemathesis found something (exit {:?}):\n{stdout}\n{stderr}",
        output.status.code()
    );
}
