// An argument is deserialised from the model's JSON, so it cannot borrow: `&str` is
// one error at the parameter, naming `String`. The tool is still defined, so the
// code that names it gives no second error.
use brute::tools::{ToolError, ToolSet};

/// Shouts a text.
#[brute::tool]
async fn shout(text: &str) -> Result<String, ToolError> {
    Ok(text.to_uppercase())
}

fn main() {
    let mut specs = Vec::new();
    (Shout,).specs(&mut specs);
}
