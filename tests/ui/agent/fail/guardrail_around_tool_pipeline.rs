// `Guardrail` checks each reply before its tool calls run: a tool pipeline below it
// would run them first, so `Guardrail` forbids one further in.
use brute::middleware::guard::{Action, Pii, PiiGuard};
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{Message, brute_agent, middleware::{Guardrail, Loop}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::ToolResult;
        use Guardrail { guard: PiiGuard::new().detect(Pii::Email, Action::Redact) };
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
