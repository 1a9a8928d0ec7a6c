use brute::tools::ToolError;

struct Counter;

#[brute::tool]
impl Counter {
    /// Counts.
    async fn count(&self) -> Result<String, ToolError> {
        Ok(self.helper())
    }

    fn helper(&self) -> String {
        "1".into()
    }
}

fn main() {}
