//! The web chat at `/`: one static page, embedded in the binary.

use axum::response::Html;

/// The page: streams replies, shows tool calls and their results, and offers
/// approve and deny buttons for calls that wait for a decision.
const PAGE: &str = include_str!("../static/index.html");

/// `GET /`.
#[utoipa::path(
    get,
    path = "/",
    operation_id = "web_chat",
    tag = "server",
    responses((status = 200, description = "The web chat page", body = String, content_type = "text/html")),
)]
pub(crate) async fn page() -> Html<&'static str> {
    Html(PAGE)
}
