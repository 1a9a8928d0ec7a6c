use brute::tools::ToolError;

/// Adds.
#[brute::tool(nmae = "plus")]
async fn add(a: i64, b: i64) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

fn main() {}
