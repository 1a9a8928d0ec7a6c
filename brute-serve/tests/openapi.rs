//! The OpenAPI description at `GET /openapi.json` is public, is OpenAPI 3.1, names
//! every route the server mounts, and holds: schemathesis (from PyPI, installed by
//! `cargo xtask test` into `.ci/venv`) runs all its checks against a server on
//! 127.0.0.1 and finds nothing (no 5xx, no status, content type, header or body that
//! the description lacks, no valid request refused and no invalid one accepted).

#![allow(clippy::unwrap_used)]

mod support;

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

/// Four rules a request's schema cannot state, each a 400 that `positive_data_acceptance` is
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
///   a tool call and its result (`invalid_position`), which is the session's state.
const CONFIG: &str = r#"
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
