// The context is recognised by its type's name; a type of one's own named
// `ToolContext` is then one error at the parameter.
use brute::tools::ToolError;

struct ToolContext;

/// Looks.
#[brute::tool]
async fn look(cx: &ToolContext) -> Result<String, ToolError> {
    let _ = cx;
    Ok(String::new())
}

fn main() {
    let _ = ToolContext;
}
