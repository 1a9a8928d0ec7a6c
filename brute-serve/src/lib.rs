//! # brute-serve
//!
//! Serves [`brute`] agents over HTTP. The server keeps no state of its own:
//! every session lives in the session store that the agents' `SessionLog` uses, and
//! each request names its session, so several servers on one PostgreSQL serve the
//! same sessions behind any load balancer.
//!
//! | endpoint | what |
//! |---|---|
//! | `POST /v1/sessions/{id}/turns` | `{"input": "..", "agent": ".."?}` in, Server-Sent Events out: one [`TurnItem`](brute::stream::TurnItem) per event, named by its `type`, `end` last; **409** while another turn holds the session |
//! | `POST /v1/sessions/{id}/approvals/{call_id}` | a decision on a call that waits for approval (`{"decision": "approve"}`, `"deny"` with a `reason`, `"edit"` with `arguments`); the paused turn resumes and streams as above |
//! | `GET /v1/sessions/{id}` | the stored history and the calls waiting for approval (`404` for none) |
//! | `DELETE /v1/sessions/{id}` | deletes it (`204`; `409` while a turn runs) |
//! | `POST /v1/sessions/{id}/fork` | `{"at": n, "to"?: ".."}`: a new session holding the first `n` messages (201 `{"id", "from", "messages"}`); `400 invalid_position` for a point between a tool call and its result, `409 exists` when `to` holds messages |
//! | `POST /v1/sessions/{id}/rewind` | `{"to": n}`: cuts the session back to its first `n` messages, under its lease (`409` while a turn runs; `400 invalid_position` as for a fork) |
//! | `GET /v1/admin/store` | the store's size (sessions, messages, bytes, bytes on disk) and each session's, with its last write |
//! | `POST /v1/admin/retention` | `{"max_age_secs"?, "max_sessions"?, "prune_to"?, "discard"?}`: deletes old sessions (never one a turn holds) and prunes the rest through [`Server::archive`] |
//! | `POST /v1/chat/completions` | OpenAI-compatible, streamed and not; `model` names the agent; the request's `tools` run on the client (their calls come back as `tool_calls`), `response_format` is the turn's output schema, `stream_options.include_usage` adds the usage chunk; a call waiting for approval is a 403 `approval_required` naming the session kept for the decision |
//! | `GET /v1/agents` | the agents, the default first |
//! | `GET /v1/models`, `GET /v1/models/{id}` | the agents in OpenAI's model-list shape (`{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`), each `id` a `model` of chat completions; 404 for an unknown id |
//! | `GET /.well-known/agent-card.json`, `POST /a2a` | A2A v1.0: the default agent's card (no auth) and its JSON-RPC binding (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`); `/a2a/{agent}` for the others, and the same over HTTP+JSON under `/a2a-rest`; see [`A2aAgent`] for the client |
//! | `POST /agui`, `POST /agui/{agent}` | AG-UI 1.0: a run (`RunAgentInput`) streamed as AG-UI events; `threadId` is the session |
//! | `GET /healthz`, `GET /readyz` | the process answers; the store answers |
//! | `GET /openapi.json` | the OpenAPI 3.1 description of all of these (no auth), derived from the code |
//! | `GET /` | a web chat |
//!
//! Every `/v1` endpoint needs `Authorization: Bearer <token>` unless the server was
//! explicitly built [`without_auth`](Server::without_auth). Bodies are limited
//! ([`body_limit`](Server::body_limit), `413` past it), requests are timed out
//! ([`timeout`](Server::timeout)), and [`serve`](Server::serve) shuts down gracefully:
//! it stops accepting, lets running turns finish, then returns.
//!
//! Every error status has a JSON body in the OpenAI shape, `{"error": {"message",
//! "type", "param", "code"}}` ([`ApiError`]), unknown routes (404), wrong methods (405),
//! bodies over the limit (413) and non-JSON `content-type`s (415) included; a session
//! id must be 1 to 128 bytes, not start with `.` and hold no `/`, `\` or control
//! character (400 otherwise).
//!
//! ```no_run
//! use std::sync::Arc;
//! use brute::{Message, brute_agent, middleware::SessionLog, session::JsonlStore};
//! use brute_serve::Server;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(JsonlStore::new("sessions"));
//! let agent = brute_agent! {
//!     use SessionLog { store: store.clone() };
//!     run |_env| async { Ok(Message::assistant("hello")) };
//! };
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! Server::new(store)
//!     .agent("assistant", agent)
//!     .bearer_token(std::env::var("BRUTE_TOKEN")?)
//!     .serve(listener, async { tokio::signal::ctrl_c().await.ok(); })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Then `curl -N -H "Authorization: Bearer $BRUTE_TOKEN" -H 'content-type: application/json' -d '{"input":"hi"}'
//! http://127.0.0.1:8080/v1/sessions/alice/turns` shows the turn as it runs.

mod a2a;
mod admin;
mod agui;
mod approvals;
mod auth;
mod chat;
mod chat_stream;
mod chat_tap;
mod chat_wire;
mod encode;
mod error;
mod fallback;
mod health;
mod idempotency;
mod ids;
mod live;
mod models;
mod openapi;
mod remote;
mod runner;
mod schema;
mod server;
mod session_id;
mod sessions;
mod sessions_api;
mod sse;
mod state;
mod turns;
mod web;
mod whole;

pub use a2a::client::{A2aAgent, A2aCallError, A2aReply, A2aState, A2aTask};
pub use error::{ApiError, ServeError};
pub use remote::{RemoteAgent, RemoteError, RemoteTask};
pub use server::Server;
