// Loops do not nest: each loop counts its own passes, so a guard inside counts only
// the inner loop's. A second loop inside the first is one error at the inner loop,
// whether it is the same loop or another.
use brute::{
    brute_agent,
    middleware::{Loop, MaxIterations},
    providers::ScriptedModel,
    tools::{DefaultToolPipeline, Tools},
};

async fn tool_result_twice() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use Loop::ToolResult;
        use MaxIterations { max: 3 };
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run ScriptedModel::new([]);
    };
    let _ = agent.start("go").await;
}

async fn while_inside_tool_result() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use Loop::While { condition: |env| env.iteration < 3 };
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run ScriptedModel::new([]);
    };
    let _ = agent.start("go").await;
}

fn main() {
    drop(tool_result_twice());
    drop(while_inside_tool_result());
}
