// What a tool returns becomes the text the model reads: a number is one error at the
// return type.
use brute::tools::ToolError;

/// Counts.
#[brute::tool]
async fn count() -> Result<i64, ToolError> {
    Ok(1)
}

fn main() {}
