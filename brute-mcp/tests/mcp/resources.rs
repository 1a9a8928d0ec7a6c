//! `ContentServer`: the files beneath a tool root as MCP resources, confined to the
//! root, and named prompts; tested with rmcp's own client over streamable HTTP.

use crate::support;

use brute::middleware::Prompt;
use brute::tools::{ToolContext, Tools};
use brute_mcp::{ContentServer, ToolSetServer};
use rmcp::ServiceExt;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use tokio::sync::oneshot;

type Client = RunningService<RoleClient, ()>;

/// A project beside a secret outside it: a text file, a binary file, a hidden file,
/// and two links, one inside and one to the secret.
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src")).expect("folders");
    std::fs::write(root.join("notes.txt"), "hello, key sk-123-secret\n").expect("a file");
    std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").expect("a file");
    std::fs::write(root.join("logo.png"), [0x89, b'P', b'N', b'G', 0xff, 0x00]).expect("a file");
    std::fs::write(root.join(".env"), "TOKEN=1\n").expect("a file");
    std::fs::write(dir.path().join("secret.txt"), "outside the root\n").expect("a file");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("escape.txt"))
        .expect("a link out");
    std::os::unix::fs::symlink("notes.txt", root.join("inside.txt")).expect("a link in");
    (dir, root)
}

async fn connect(root: &std::path::Path) -> (Client, oneshot::Sender<()>) {
    let tools = ToolSetServer::new(Tools::READ_ONLY, ToolContext::new(root).expect("a root"));
    let secrets =
        brute::tools::Secrets::default().with(brute::tools::Redactions::from(["sk-123-secret"]));
    let files = ToolContext::new(root)
        .expect("a root")
        .with_secrets(secrets);
    let server = ContentServer::new(tools)
        .files(files)
        .expect("the root opens")
        .prompt(
            "reviewer",
            "The reviewer's system prompt.",
            "You review Rust code.",
        )
        .prompt(
            "pass",
            "Built for each request.",
            Prompt::build(|env| format!("pass {}", env.iteration)),
        );
    let (url, stop) = support::serve_http(server).await;
    brute_mcp::ensure_crypto_provider();
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = ().serve(transport).await.expect("the handshake succeeds");
    (client, stop)
}

async fn read(client: &Client, uri: &str) -> Result<ResourceContents, String> {
    client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map(|mut result| result.contents.remove(0))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_files_beneath_the_root_are_resources() {
    let (_dir, root) = project();
    let (client, _stop) = connect(&root).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert!(info.capabilities.resources.is_some());
    assert!(info.capabilities.tools.is_some(), "the tools stay");

    let listed = client
        .list_all_resources()
        .await
        .expect("the files are listed");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "root:///inside.txt",
            "root:///logo.png",
            "root:///notes.txt",
            "root:///src/lib.rs"
        ],
        "hidden files and the link out are not listed"
    );

    match read(&client, "root:///notes.txt").await {
        Ok(ResourceContents::TextResourceContents {
            text, mime_type, ..
        }) => {
            assert_eq!(text, "hello, key [redacted]\n", "secrets are redacted");
            assert_eq!(mime_type.as_deref(), Some("text/plain"));
        }
        other => panic!("notes.txt is text: {other:?}"),
    }
    match read(&client, "root:///logo.png").await {
        Ok(ResourceContents::BlobResourceContents {
            blob, mime_type, ..
        }) => {
            assert_eq!(blob, "iVBOR/8A");
            assert_eq!(mime_type.as_deref(), Some("image/png"));
        }
        other => panic!("logo.png is binary: {other:?}"),
    }
    assert!(matches!(
        read(&client, "root:///inside.txt").await,
        Ok(ResourceContents::TextResourceContents { .. })
    ));
}

#[tokio::test]
async fn a_resource_outside_the_root_is_refused_without_naming_the_root() {
    let (_dir, root) = project();
    let (client, _stop) = connect(&root).await;
    for uri in [
        "root:///../secret.txt",
        "root:///src/../../secret.txt",
        "root:///escape.txt",
        "root:///%2E%2E/secret.txt",
    ] {
        let error = read(&client, uri).await.expect_err(uri);
        assert!(error.contains("leaves the tool root"), "{uri}: {error}");
        assert!(!error.contains(&*root.to_string_lossy()), "{uri}: {error}");
    }
    let error = read(&client, "file:///etc/passwd")
        .await
        .expect_err("another scheme");
    assert!(error.contains("not a file of this server"), "{error}");
    let error = read(&client, "root:///missing.txt")
        .await
        .expect_err("missing");
    assert!(error.contains("no such file"), "{error}");
    let error = read(&client, "root:///src").await.expect_err("a directory");
    assert!(error.contains("not a file"), "{error}");
}

#[tokio::test]
async fn prompts_are_listed_and_rendered() {
    let (_dir, root) = project();
    let (client, _stop) = connect(&root).await;
    let prompts = client
        .list_all_prompts()
        .await
        .expect("the prompts are listed");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["reviewer", "pass"]);
    let got = client
        .get_prompt(GetPromptRequestParams::new("reviewer"))
        .await
        .expect("the prompt is returned");
    assert_eq!(
        got.description.as_deref(),
        Some("The reviewer's system prompt.")
    );
    let texts: Vec<String> = got
        .messages
        .iter()
        .filter_map(|m| m.content.as_text().map(|t| t.text.clone()))
        .collect();
    assert_eq!(texts, ["You review Rust code."]);
    let error = client
        .get_prompt(GetPromptRequestParams::new("nope"))
        .await
        .expect_err("an unknown prompt");
    assert!(
        error
            .to_string()
            .contains("available prompts: reviewer, pass"),
        "{error}"
    );
}
