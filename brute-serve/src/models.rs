//! `GET /v1/models` and `GET /v1/models/{id}`: the agents, in OpenAI's model-list
//! shape, each id a `model` that `/v1/chat/completions` accepts.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;
use crate::state::Shared;

/// One agent as a model object (OpenAI's `Model`).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Model)]
pub(crate) struct ModelObject<'a> {
    /// The agent's name: the `model` of a chat completion.
    id: &'a str,
    /// Always `model`.
    #[schema(value_type = String, pattern = "^model$")]
    object: &'static str,
    /// When the server was built, in seconds since the Unix epoch.
    created: u64,
    /// Always `brute`.
    #[schema(value_type = String, pattern = "^brute$")]
    owned_by: &'static str,
}

/// The agents as OpenAI's model list.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ModelList<'a> {
    /// Always `list`.
    #[schema(value_type = String, pattern = "^list$")]
    object: &'static str,
    /// The agents, the default first.
    data: Vec<ModelObject<'a>>,
}

/// One agent as a model object (`created`: when the server was built).
fn model<'a>(shared: &Shared, name: &'a str) -> ModelObject<'a> {
    ModelObject {
        id: name,
        object: "model",
        created: shared.created,
        owned_by: "brute",
    }
}

/// `GET /v1/models`: `{"object": "list", "data": [..]}`, the default agent first.
#[utoipa::path(
    get,
    path = "/v1/models",
    operation_id = "list_models",
    tag = "chat",
    security(("bearer" = [])),
    responses((status = 200, description = "The agents, each a `model` of chat completions", body = ModelList<'_>)),
)]
pub(crate) async fn list(State(shared): State<Arc<Shared>>) -> Response {
    let data = shared
        .names()
        .into_iter()
        .map(|name| model(&shared, name))
        .collect();
    Json(ModelList {
        object: "list",
        data,
    })
    .into_response()
}

/// `GET /v1/models/{id}`: one agent; 404 in the error shape for an unknown id.
#[utoipa::path(
    get,
    path = "/v1/models/{id}",
    operation_id = "get_model",
    tag = "chat",
    params(("id" = String, Path, description = "The agent's name (it may hold `/`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The agent as a model", body = ModelObject<'_>),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    shared.agent(Some(&id))?;
    Ok(Json(model(&shared, &id)).into_response())
}
