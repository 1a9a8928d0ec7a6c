// `&Path` as an argument of a tool with state: one error at the parameter, naming
// `PathBuf`.
use std::path::Path;

use brute::tools::ToolError;

struct Sizes;

#[brute::tool]
impl Sizes {
    /// Measures a file.
    async fn size(&self, path: &Path) -> Result<String, ToolError> {
        Ok(path.display().to_string())
    }
}

fn main() {}
