// A required option left out (`tools` of `DefaultToolPipeline` has no default) is one
// error at its `use` line, naming the layer and the option, as bon names an unset
// member.
use brute::{brute_agent, middleware::Loop, providers::ScriptedModel, tools::DefaultToolPipeline};

async fn run_agent() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline;
        run ScriptedModel::new([]);
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
