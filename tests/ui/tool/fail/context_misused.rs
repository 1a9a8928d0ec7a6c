// The context is recognised by its type, under any name and path: taken twice, by
// `&mut` or by value, each is one error at its parameter.
use brute::tools::{ToolContext, ToolError};

/// Looks twice.
#[brute::tool]
async fn look(
    cx: &ToolContext,
    again: &brute::tools::ToolContext,
    changed: &mut ToolContext,
    owned: ToolContext,
) -> Result<String, ToolError> {
    let _ = (cx, again, changed, owned);
    Ok(String::new())
}

fn main() {}
