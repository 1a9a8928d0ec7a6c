// Issue 14 traps 1 and 2: a tool pipeline needs a loop outside it (rule of kind
// `ToolPipeline`). Above `Loop::ToolResult`, above `Loop::While` or with no loop at
// all it does not compile, and the error is at the misplaced pipeline and says
// "move", not at the loop (whose own rule wants a pipeline further in).
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{Message, brute_agent, middleware::Loop};

fn above_tool_result_loop() {
    let _agent = brute_agent! {
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        use Loop::ToolResult;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn above_while_loop() {
    let _agent = brute_agent! {
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        use Loop::While;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn without_loop() {
    let _agent = brute_agent! {
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    above_tool_result_loop();
    above_while_loop();
    without_loop();
}
