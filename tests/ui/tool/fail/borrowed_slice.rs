// `&[T]` as an argument: one error at the parameter, naming `Vec<T>`.
use brute::tools::ToolError;

/// Adds numbers.
#[brute::tool]
async fn total(numbers: &[i64]) -> Result<String, ToolError> {
    Ok(numbers.iter().sum::<i64>().to_string())
}

fn main() {}
