// `ToolRetry` sits inside `Validate` in a per-call pipeline: each attempt runs the
// checked call, and a call that fails validation is never retried.
use brute::tools::{Execute, ToolRetry, Validate};

fn main() {
    let _pipeline = brute::pipeline! {
        use ToolRetry { attempts: 3 };
        use Validate;
        run Execute;
    };
}
