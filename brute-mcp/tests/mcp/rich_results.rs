//! Tool results with images and documents over MCP, both ways: a brute tool's parts
//! served as `image` and embedded `resource` blocks (read by rmcp's own client), and
//! an MCP server's image, audio and resource blocks reaching the model as brute parts
//! (or, for what brute cannot carry, as a line saying what was left out).

use crate::support;

use brute::message::{Part, Source};
use brute::middleware::Loop;
use brute::providers::ScriptedModel;
use brute::tools::{DefaultToolPipeline, ToolContext, ToolError, ToolOutput};
use brute::{Message, ToolCall, brute_agent, tool};
use brute_mcp::{McpTools, ToolSetServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_BASE64: &str = "iVBORw0KGgo=";
const PDF: &[u8] = b"%PDF-1.7";
const PDF_BASE64: &str = "JVBERi0xLjc=";

/// Draws last week's sales (a tool whose result has parts).
#[tool]
async fn chart(_cx: &ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("Sales of last week.")
        .with_part(Part::image("image/png", PNG).map_err(|e| e.to_string())?)
        .with_part(Part::pdf(PDF).titled("report.pdf"))
        .with_part(Part::image_url("https://example.com/logo.png")))
}

/// Runs one call of `name` through an agent whose only tools are `tools`, and returns
/// the tool result message.
async fn result_through_agent(tools: McpTools, name: &str) -> Message {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![ToolCall::new("c1", name, json!({}))]),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (tools,), root: dir.path(), output_dir: dir.path() };
        run model;
    };
    let outcome = agent.start("Go.").await.expect("the turn runs");
    outcome.env.messages[2].clone()
}

#[tokio::test]
async fn a_brute_tools_parts_are_served_as_image_and_resource_blocks() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let context = ToolContext::new(root.path()).expect("a context");
    let (url, _stop) = support::serve_http(ToolSetServer::new((Chart,), context)).await;
    let client: RunningService<RoleClient, ()> = {
        brute_mcp::ensure_crypto_provider();
        ().serve(StreamableHttpClientTransport::from_uri(url.clone()))
    }
    .await
    .expect("the handshake succeeds");
    let result = client
        .call_tool(CallToolRequestParams::new("chart"))
        .await
        .expect("the call is answered");
    assert_eq!(result.is_error, Some(false));
    let blocks = serde_json::to_value(&result.content).expect("blocks serialise");
    assert_eq!(
        blocks,
        json!([
            {"type": "text", "text": "Sales of last week."},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "attachment:report.pdf", "mimeType": "application/pdf", "blob": PDF_BASE64
            }},
            {"type": "resource_link", "uri": "https://example.com/logo.png", "name": "image-3"}
        ])
    );
    client.cancel().await.expect("the client closes");

    // brute's client reads them back as the parts the tool made (the image given by
    // URL comes back as a resource link, which MCP results hold by URI only).
    let tools = McpTools::http("charts", url)
        .await
        .expect("the client connects");
    let message = result_through_agent(tools, "chart").await;
    assert_eq!(
        message.parts(),
        [
            Part::image("image/png", PNG).expect("a part"),
            Part::pdf(PDF).titled("attachment:report.pdf"),
        ]
    );
    assert_eq!(
        message.content,
        "Sales of last week.\n[resource link: https://example.com/logo.png]"
    );
}

/// A third-party MCP server whose one tool, `media`, answers with every kind of
/// content block.
#[derive(Clone)]
struct MediaServer;

impl ServerHandler for MediaServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::from_value(json!({"type": "object"})).expect("a schema");
        let tool = Tool::new("media", "Answers with media.", std::sync::Arc::new(schema));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![
            ContentBlock::text("Here is everything."),
            ContentBlock::image(PNG_BASE64, "image/png"),
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::resource(
                ResourceContents::blob(PNG_BASE64, "file:///shot.png").with_mime_type("image/png"),
            ),
            ContentBlock::resource(
                ResourceContents::blob(PDF_BASE64, "file:///guide.pdf")
                    .with_mime_type("application/pdf"),
            ),
            ContentBlock::embedded_text("file:///notes.txt", "a note"),
            ContentBlock::resource(
                ResourceContents::blob("UEsDBA==", "file:///all.zip")
                    .with_mime_type("application/zip"),
            ),
            ContentBlock::image("not base64!", "image/png"),
        ])
        .into())
    }
}

#[tokio::test]
async fn mcp_images_and_resources_reach_the_model_as_parts_and_audio_as_a_note() {
    let (url, _stop) = support::serve_http(MediaServer).await;
    let tools = McpTools::http("media", url)
        .await
        .expect("the client connects");
    let message = result_through_agent(tools, "media").await;
    assert_eq!(
        message.parts(),
        [
            Part::image("image/png", PNG).expect("a part"),
            Part::image("image/png", PNG).expect("a part"),
            Part::pdf(PDF).titled("file:///guide.pdf"),
        ]
    );
    assert!(matches!(message.parts()[0].source(), Source::Data(_)));
    assert_eq!(
        message.content,
        [
            "Here is everything.",
            "[audio (audio/wav, 8 bytes of base64) left out: brute's messages carry no audio]",
            "a note",
            "[resource file:///all.zip (application/zip, binary) left out: brute shows binary resources only as images and PDFs]",
            "[image (image/png) left out: the data is not base64 (standard alphabet, padded): its length 11 is not a multiple of 4]",
        ]
        .join("\n")
    );
}
