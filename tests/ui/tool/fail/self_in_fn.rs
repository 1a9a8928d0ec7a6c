use brute::tools::ToolError;

/// Says yes.
#[brute::tool]
async fn yes(self) -> Result<String, ToolError> {
    Ok("yes".into())
}

fn main() {}
