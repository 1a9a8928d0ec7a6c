// Every mistake is reported, each at its own line: an unknown key of the attribute
// and a borrowed argument (nested in the type), in one go.
use brute::tools::{ToolContext, ToolError};

/// Joins words.
#[brute::tool(nmae = "join")]
async fn join(
    words: Vec<&str>,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    let _ = cx;
    Ok(words.join(" "))
}

fn main() {}
