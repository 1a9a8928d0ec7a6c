//! `GET /openapi.json`: the OpenAPI 3.1 description of the server, derived from the
//! wire types (`ToSchema`) and the handlers' `#[utoipa::path]` annotations, so a route
//! or a field that changes changes the description with it. It is built on the first
//! request for it and served from memory after: no request but that one pays for it.
//!
//! The error answers every route shares (401 behind the token, 413 and 415 on a body,
//! 400 for a path or query that cannot be read) are added here, by [`Shared`], rather
//! than repeated on every handler.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

use crate::error::ErrorBody;

/// The description: every route the server mounts.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "brute-serve",
        description = "Serves brute agents over HTTP: turns as Server-Sent Events, sessions in a \
            session store, an OpenAI-compatible chat-completions endpoint, A2A and AG-UI \
            bindings, a web chat. Every error status has a JSON body of the `Error` shape \
            (the A2A HTTP+JSON binding answers its own errors as `google.rpc.Status`). \
            The routes under `/v1`, `/a2a` and `/agui` need `Authorization: Bearer <token>` \
            unless the server was built without auth; the health checks, the web page, the \
            agent cards and this description are public."
    ),
    paths(
        crate::turns::post,
        crate::approvals::post,
        crate::sessions_api::get,
        crate::sessions_api::delete,
        crate::admin::fork,
        crate::admin::rewind,
        crate::admin::store,
        crate::admin::retention,
        crate::chat::post,
        crate::health::agents,
        crate::models::list,
        crate::models::get,
        crate::health::live,
        crate::health::ready,
        crate::web::page,
        describe,
        crate::agui::default_agent,
        crate::agui::named_agent,
        crate::a2a::default_card,
        crate::a2a::named_card,
        crate::a2a::jsonrpc::default_agent,
        crate::a2a::jsonrpc::named_agent,
        crate::a2a::rest::message_send,
        crate::a2a::rest::message_stream,
        crate::a2a::rest::agent_message_send,
        crate::a2a::rest::agent_message_stream,
        crate::a2a::rest::get_task,
        crate::a2a::rest::agent_get_task,
        crate::a2a::rest::post_task,
        crate::a2a::rest::agent_post_task,
    ),
    components(schemas(ErrorBody<'_>)),
    modifiers(&Shared),
)]
struct Description;

/// `GET /openapi.json`: this description (public, like the health checks: it names
/// the routes and their shapes, nothing of the server's agents or sessions).
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    tag = "server",
    responses((status = 200, description = "The OpenAPI 3.1 description of this server", body = Object)),
)]
async fn describe(cached: Arc<OnceLock<Bytes>>) -> Response {
    let json = cached.get_or_init(|| match Description::openapi().to_json() {
        Ok(json) => Bytes::from(json),
        // Serialising plain data does not fail; if it did, the description says so.
        Err(e) => Bytes::from(format!(
            r#"{{"error":{{"message":"the description cannot be written: {e}","type":"error","param":null,"code":"error"}}}}"#
        )),
    });
    ([(CONTENT_TYPE, "application/json")], json.clone()).into_response()
}

/// The handler of `GET /openapi.json`, with the description it builds once.
pub(crate) fn handler() -> axum::routing::MethodRouter<Arc<crate::state::Shared>> {
    let cached = Arc::new(OnceLock::new());
    axum::routing::get(move || describe(cached.clone()))
}

/// The operations of the JSON-RPC binding, whose body may be anything or nothing.
const JSON_RPC: [&str; 2] = ["a2a_jsonrpc", "a2a_agent_jsonrpc"];

/// What every operation shares: the bearer scheme, and the error answers that the
/// server's layers give before a handler runs.
struct Shared;

impl utoipa::Modify for Shared {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        for item in openapi.paths.paths.values_mut() {
            // JSON-RPC answers every body, none included, with a JSON-RPC response.
            if let Some(operation) = item.post.as_mut()
                && JSON_RPC.contains(&operation.operation_id.as_deref().unwrap_or_default())
                && let Some(utoipa::openapi::RefOr::T(body)) = operation.request_body.as_mut()
            {
                body.required = Some(utoipa::openapi::Required::False);
            }
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.delete,
                &mut item.put,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                shared_errors(operation);
            }
        }
    }
}

/// Adds to `operation` the errors of the layers in front of its handler.
fn shared_errors(operation: &mut Operation) {
    let secured = operation
        .security
        .as_ref()
        .is_some_and(|requirements| !requirements.is_empty());
    if secured {
        error(
            operation,
            "401",
            "No `Authorization: Bearer <token>` header, or a wrong token",
        );
    }
    if operation.request_body.is_some() {
        error(
            operation,
            "413",
            "The request body is larger than the server's limit",
        );
        error(
            operation,
            "415",
            "The request body says it is not JSON (`content-type`)",
        );
        error(
            operation,
            "400",
            "The request body is not a JSON object of this shape (the message names the line, column and field)",
        );
    }
    if operation
        .parameters
        .as_ref()
        .is_some_and(|parameters| !parameters.is_empty())
    {
        error(
            operation,
            "400",
            "A path or query parameter that breaks its rule (a session id: 1 to 128 bytes, \
             not starting with `.`, no `/`, `\\` or control character)",
        );
    }
}

/// Documents status `status` of `operation` as an [`ErrorBody`], unless the handler
/// already documents it.
fn error(operation: &mut Operation, status: &str, description: &str) {
    if operation.responses.responses.contains_key(status) {
        return;
    }
    let response = ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Error")))
                .build(),
        )
        .build();
    operation
        .responses
        .responses
        .insert(status.to_owned(), response.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_is_openapi_3_1_with_the_shared_errors() {
        let json = serde_json::to_value(Description::openapi()).unwrap_or_default();
        assert_eq!(json["openapi"], "3.1.0");
        let turns = &json["paths"]["/v1/sessions/{id}/turns"]["post"];
        for status in ["200", "400", "401", "404", "409", "413", "415"] {
            assert!(
                turns["responses"].get(status).is_some(),
                "{status}: {turns}"
            );
        }
        let id = &turns["parameters"][0];
        assert_eq!(id["name"], "id");
        assert_eq!(id["schema"]["pattern"], crate::session_id::PATTERN);
        assert_eq!(id["schema"]["maxLength"], crate::session_id::MAX_LEN);
        assert!(
            json["paths"]["/healthz"]["get"]["responses"]
                .get("401")
                .is_none()
        );
    }
}
