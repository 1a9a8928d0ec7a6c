// `run` of a number is one error at the number, and nothing more where the agent is
// used.
use brute::brute_agent;

async fn run_agent() {
    let agent = brute_agent! {
        run 42;
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
