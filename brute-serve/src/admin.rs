//! The store's administration, behind the token like every `/v1` endpoint:
//! `GET /v1/admin/store` (sizes), `POST /v1/admin/retention` (delete old sessions,
//! prune old history), and a session's `POST /v1/sessions/{id}/fork` and
//! `POST /v1/sessions/{id}/rewind`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use brute::Message;
use brute::session::{
    ForkError, Retention, RetentionReport, SessionError, SessionInfo, SessionStore,
};
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, parse};
use crate::state::{Shared, SharedArchive};

/// What an error of a store-wide operation names as its session.
const ALL: &str = "(all)";

/// Runs a store operation under the request timeout ([`Shared::timed`]); `what`
/// names it in a 504, a failure is [`answer`]ed for session `id`.
async fn timed<T>(
    shared: &Shared,
    what: &str,
    id: &str,
    work: impl Future<Output = Result<T, SessionError>>,
) -> Result<T, ApiError> {
    shared.timed(what, work, |e| answer(id, e)).await
}

/// A refused fork, rewind or prune as the client sees it; anything else as any
/// store failure ([`ApiError::store`]).
fn answer(id: &str, error: &SessionError) -> ApiError {
    match error {
        SessionError::Fork(ForkError::TargetExists { .. }) => {
            ApiError::new(StatusCode::CONFLICT, "exists", error.to_string())
        }
        // A position in a session that holds nothing: there is no such session.
        SessionError::Fork(ForkError::PastEnd { len: 0, .. }) => {
            ApiError::not_found(format!("no session `{id}`"))
        }
        SessionError::Fork(
            ForkError::SplitsToolCall { .. }
            | ForkError::PastEnd { .. }
            | ForkError::SameSession { .. },
        ) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_position",
            error.to_string(),
        ),
        _ => ApiError::store(id, error),
    }
}

/// A session's size as `GET /v1/admin/store` lists it (`brute::session::SessionInfo`'s
/// serde form).
#[derive(utoipa::ToSchema)]
#[schema(as = SessionInfo)]
#[allow(dead_code)] // A description only.
pub(crate) struct SessionInfoSchema {
    /// The session id.
    id: String,
    /// The messages stored.
    messages: u64,
    /// Their bytes as stored.
    bytes: u64,
    /// When it was last written, in milliseconds since the Unix epoch, if the store knows.
    updated: Option<u64>,
}

/// The answer of `GET /v1/admin/store`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct StoreView {
    /// The sessions stored.
    sessions: u64,
    /// The messages of all of them.
    messages: u64,
    /// Their bytes as stored.
    bytes: u64,
    /// What the store takes on disk, when it can tell.
    disk_bytes: Option<u64>,
    /// Each session's size.
    #[schema(value_type = Vec<SessionInfoSchema>)]
    list: Vec<SessionInfo>,
}

/// `GET /v1/admin/store`: the whole store's size and each session's, `{"sessions",
/// "messages", "bytes", "disk_bytes", "list": [{"id", "messages", "bytes",
/// "updated"}]}` (`updated` in milliseconds since the Unix epoch).
#[utoipa::path(
    get,
    path = "/v1/admin/store",
    operation_id = "store_size",
    tag = "admin",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The store's size and each session's", body = StoreView),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn store(State(shared): State<Arc<Shared>>) -> Result<Json<StoreView>, ApiError> {
    let sessions = timed(
        &shared,
        "listing the store",
        ALL,
        shared.sessions.sessions(),
    )
    .await?;
    let size = timed(
        &shared,
        "measuring the store",
        ALL,
        shared.sessions.store_size(),
    )
    .await?;
    Ok(Json(StoreView {
        sessions: size.sessions,
        messages: size.messages,
        bytes: size.bytes,
        disk_bytes: size.disk_bytes,
        list: sessions,
    }))
}

/// The body of `POST /v1/admin/retention`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetentionRequest {
    /// Delete sessions not written for this many seconds.
    #[serde(default, deserialize_with = "crate::whole::optional")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    max_age_secs: Option<u64>,
    /// Keep at most this many sessions, the most recently written.
    #[serde(default, deserialize_with = "crate::whole::optional")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    max_sessions: Option<usize>,
    /// Prune every session left to at most this many messages.
    #[serde(default, deserialize_with = "crate::whole::optional")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    prune_to: Option<usize>,
    /// Prune without an archive: what goes is gone.
    #[serde(default)]
    discard: bool,
}

/// `POST /v1/admin/retention`: `{"max_age_secs"?, "max_sessions"?, "prune_to"?,
/// "discard"?}`; deletes the sessions past the age or the count (never one a turn
/// holds: `skipped`), then prunes the others to `prune_to` messages through the
/// server's archive. `{"deleted": [..], "skipped": [..], "kept", "pruned": {id:
/// messages removed}, "busy": [..]}`.
#[utoipa::path(
    post,
    path = "/v1/admin/retention",
    operation_id = "apply_retention",
    tag = "admin",
    request_body(content = RetentionRequest, description = "The policy: any of age, count and prune"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "What was deleted, skipped, kept and pruned", body = RetentionView),
        (status = 400, description = "`prune_to` on a server without an archive and without `discard`", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store or the archive failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn retention(
    State(shared): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Json<RetentionView>, ApiError> {
    let request: RetentionRequest = parse(&body)?;
    let archive: SharedArchive = match (&shared.archive, request.discard) {
        (_, true) => Arc::new(brute::session::discard),
        (Some(archive), false) => archive.clone(),
        (None, false) if request.prune_to.is_some() => {
            return Err(ApiError::invalid(
                "request body: `prune_to` without an archive: this server has none (`Server::archive`); send `\"discard\": true` to prune without one",
            ));
        }
        (None, false) => Arc::new(brute::session::discard),
    };
    let mut policy = Retention::new();
    if let Some(secs) = request.max_age_secs {
        policy = policy.max_age(Duration::from_secs(secs));
    }
    if let Some(count) = request.max_sessions {
        policy = policy.max_sessions(count);
    }
    let mut report = RetentionReport::default();
    if policy.max_age.is_some() || policy.max_sessions.is_some() {
        let retain = shared.sessions.retain(&policy);
        report = timed(&shared, "applying retention", ALL, retain).await?;
    }
    let ids = timed(&shared, "listing the store", ALL, shared.sessions.list()).await?;
    report.kept = ids.len();
    let mut pruned = BTreeMap::new();
    let mut busy = Vec::new();
    if let Some(keep) = request.prune_to {
        for id in ids {
            let prune = shared.sessions.prune(&id, keep, &*archive);
            match tokio::time::timeout(shared.timeout, prune).await {
                Err(_) => return Err(ApiError::timeout("pruning", shared.timeout)),
                Ok(Ok(0)) => {}
                Ok(Ok(removed)) => {
                    pruned.insert(id, removed);
                }
                Ok(Err(e)) if crate::error::is_busy(&e) => busy.push(id),
                Ok(Err(e)) => return Err(answer(&id, &e)),
            }
        }
    }
    Ok(Json(RetentionView {
        deleted: report.deleted,
        skipped: report.skipped,
        kept: report.kept,
        pruned,
        busy,
    }))
}

/// The answer of `POST /v1/admin/retention`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RetentionView {
    /// The sessions deleted, oldest first.
    deleted: Vec<String>,
    /// The sessions the policy would delete but a turn holds: left alone.
    skipped: Vec<String>,
    /// The sessions left in the store.
    kept: usize,
    /// Per session pruned: how many messages went.
    pruned: BTreeMap<String, usize>,
    /// The sessions a turn held while pruning: not pruned.
    busy: Vec<String>,
}

/// The body of `POST /v1/sessions/{id}/fork`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkRequest {
    /// The messages copied: the first `at`.
    #[serde(deserialize_with = "crate::whole::number")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    at: usize,
    /// The new session's id; a new unique one when absent.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$"
    )]
    to: Option<String>,
}

/// The answer of `POST /v1/sessions/{id}/fork`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ForkView {
    /// The new session.
    id: String,
    /// The session it was copied from.
    from: String,
    /// The messages copied.
    messages: usize,
}

/// `POST /v1/sessions/{id}/fork`: `{"at": n, "to"?: ".."}`; 201 `{"id", "from",
/// "messages"}`; 400 `invalid_position` for a point between a tool call and its
/// result (the message names the position and the call id) or past the end; 409
/// `exists` when `to` holds messages.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/fork",
    operation_id = "fork_session",
    tag = "sessions",
    params(crate::session_id::SessionPath),
    request_body(content = ForkRequest, description = "Where to cut, and the new session's id"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The new session, holding the first `at` messages", body = ForkView),
        (status = 400, description = "A point between a tool call and its result, or past the end (`invalid_position`)", body = crate::error::ErrorBody<'_>),
        (status = 404, description = "No session of that id (a point past the start of an empty session)", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "The new session already holds messages (`exists`), or a turn holds it", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn fork(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<ForkView>), ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let request: ForkRequest = parse(&body)?;
    let to = match request.to {
        Some(to) => {
            crate::session_id::check(&to).map_err(ApiError::invalid)?;
            to
        }
        None => crate::ids::unique_id("fork"),
    };
    let copied = timed(
        &shared,
        "forking the session",
        &id,
        shared.sessions.fork(&id, request.at, &to),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(ForkView {
            id: to,
            from: id,
            messages: copied,
        }),
    ))
}

/// The body of `POST /v1/sessions/{id}/rewind`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewindRequest {
    /// The messages kept: the first `to`.
    #[serde(deserialize_with = "crate::whole::number")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    to: usize,
}

/// The answer of `POST /v1/sessions/{id}/rewind`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RewindView {
    /// The session.
    id: String,
    /// The messages kept.
    messages: usize,
    /// The messages cut off, oldest first.
    #[schema(value_type = Vec<crate::schema::MessageSchema>)]
    removed: Vec<Message>,
}

/// `POST /v1/sessions/{id}/rewind`: `{"to": n}`; `{"id", "messages": kept,
/// "removed": [..]}`; 409 while a turn runs on it, 400 `invalid_position` as for a
/// fork.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/rewind",
    operation_id = "rewind_session",
    tag = "sessions",
    params(crate::session_id::SessionPath),
    request_body(content = RewindRequest, description = "How many messages to keep"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The session cut back to its first `to` messages", body = RewindView),
        (status = 400, description = "A point between a tool call and its result, or past the end (`invalid_position`)", body = crate::error::ErrorBody<'_>),
        (status = 404, description = "No session of that id (a point past the start of an empty session)", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "A turn holds the session", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn rewind(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<RewindView>, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let request: RewindRequest = parse(&body)?;
    let removed = timed(
        &shared,
        "rewinding the session",
        &id,
        shared.sessions.rewind(&id, request.to),
    )
    .await?;
    Ok(Json(RewindView {
        id,
        messages: request.to,
        removed,
    }))
}
