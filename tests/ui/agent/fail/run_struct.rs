// `run` of a struct that is not a model is one error at the value.
use brute::{brute_agent, middleware::SystemPrompt};

struct Settings {
    _temperature: f32,
}

async fn run_agent() {
    let agent = brute_agent! {
        use SystemPrompt { prompt: "terse" };
        run Settings { _temperature: 0.2 };
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
