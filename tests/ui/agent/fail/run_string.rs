// `run` of a string is one error at the string, saying how to build a model from it,
// and nothing more where the agent is used.
use brute::brute_agent;

async fn run_agent() {
    let agent = brute_agent! {
        run "openai:gpt-4o-mini";
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
