// Each line ends in `;`, also after the options of a `use`.
use brute::{Message, brute_agent, middleware::SystemPrompt};

async fn run_agent() {
    let _agent = brute_agent! {
        use SystemPrompt { prompt: "Be brief." }
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
