// `Skills` sits inside the tool pipeline: the pipeline runs the `skill` tool whose
// skills it lists, and the list is added after the tools are advertised.
use brute::{Message, brute_agent, tools::{SkillLibrary, Skills}};

async fn run_agent() {
    let library = SkillLibrary::default();
    let _agent = brute_agent! {
        use Skills { skills: library };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
