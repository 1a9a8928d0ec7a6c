use brute::tools::ToolError;

/// Says yes.
#[brute::tool(schema = "{\"type\": \"object\"}")]
async fn yes() -> Result<String, ToolError> {
    Ok("yes".into())
}

fn main() {}
