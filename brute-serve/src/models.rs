//! `GET /v1/models` and `GET /v1/models/{id}`: the agents, in OpenAI's model-list
//! shape, each id a `model` that `/v1/chat/completions` accepts.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::Shared;

/// One agent as a model object: `{"id", "object": "model", "created", "owned_by"}`
/// (`created`: when the server was built, in seconds since the Unix epoch).
fn model(shared: &Shared, name: &str) -> Value {
    json!({
        "id": name,
        "object": "model",
        "created": shared.created,
        "owned_by": "brute",
    })
}

/// `GET /v1/models`: `{"object": "list", "data": [..]}`, the default agent first.
pub(crate) async fn list(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let data: Vec<Value> = shared
        .names()
        .into_iter()
        .map(|name| model(&shared, name))
        .collect();
    Json(json!({ "object": "list", "data": data }))
}

/// `GET /v1/models/{id}`: one agent; 404 in the error shape for an unknown id.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    shared.agent(Some(&id))?;
    Ok(Json(model(&shared, &id)))
}
