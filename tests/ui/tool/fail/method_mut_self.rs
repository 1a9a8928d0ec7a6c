use brute::tools::ToolError;

struct Counter(u64);

#[brute::tool]
impl Counter {
    /// Counts.
    async fn count(&mut self) -> Result<String, ToolError> {
        self.0 += 1;
        Ok(self.0.to_string())
    }
}

fn main() {}
