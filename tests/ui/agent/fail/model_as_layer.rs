// A model written as a layer is one error at its `use` line, in the words written
// there: the model goes after `run`. Nothing names the provider's generic type.
use brute::{Message, brute_agent, providers::{OpenAi, ScriptedModel}};

async fn openai_as_layer() {
    let agent = brute_agent! {
        use OpenAi;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let _ = agent.start("go").await;
}

async fn scripted_as_layer() {
    let agent = brute_agent! {
        use ScriptedModel;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let _ = agent.start("go").await;
}

fn main() {
    drop(openai_as_layer());
    drop(scripted_as_layer());
}
