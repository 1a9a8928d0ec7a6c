// The per-call tool stages are ordered at compile time: `Snapshot` locks and records
// the file that `Validate` resolves, so it must sit inside `Validate`.
use brute::tools::{Execute, Snapshot, Validate};

async fn run_agent() {
    let _per_call = brute::pipeline! {
        use Snapshot;
        use Validate;
        run Execute;
    };
}

fn main() {
    drop(run_agent());
}
