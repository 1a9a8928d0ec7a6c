// `run` closures whose future borrows the env (`async |env| ..` and `|env| async { .. }`),
// and a `Loop::While` condition that captures (issue 14, trap 9).
use brute::{Env, Message, brute_agent, middleware::Loop};

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        // An async closure borrowing the env across an await.
        let agent = brute_agent! {
            run async |env| {
                tokio::task::yield_now().await;
                Ok(Message::assistant(format!("{} messages", env.messages.len())))
            };
        };
        let outcome = agent.start("hello").await.expect("turn");
        assert_eq!(outcome.text(), Some("1 messages"));

        // A closure returning an async block that borrows the env (rewritten to an
        // async closure), capturing a local by reference.
        let greeting = String::from("hi");
        let agent = brute_agent! {
            run |env| async {
                tokio::task::yield_now().await;
                let last = env.messages.last().map_or("", |m| m.content.as_str());
                Ok(Message::assistant(format!("{greeting}, {last}")))
            };
        };
        let outcome = agent.start("you").await.expect("turn");
        assert_eq!(outcome.text(), Some("hi, you"));

        // `async move` on the block: the env is still borrowed, not moved.
        let agent = brute_agent! {
            run |env| async move { Ok(Message::assistant(env.messages[0].content.clone())) };
        };
        assert_eq!(agent.start("echo").await.expect("turn").text(), Some("echo"));

        // A capturing loop condition: moved in, and borrowed.
        let passes = 3;
        let agent = brute_agent! {
            use Loop::While { condition: move |env| env.iteration < passes };
            run async |env| Ok(Message::assistant(format!("pass {}", env.iteration)));
        };
        assert_eq!(agent.start("go").await.expect("turn").text(), Some("pass 3"));

        let stop_at = std::collections::BTreeSet::from([2u32]);
        let agent = brute_agent! {
            use Loop::While { condition: |env: &Env| !stop_at.contains(&env.iteration) };
            run |env| async { Ok(Message::assistant(format!("pass {}", env.iteration))) };
        };
        assert_eq!(agent.start("go").await.expect("turn").text(), Some("pass 2"));

        // The older form, reading the env before the future, still works.
        let agent = brute_agent! {
            use Loop::While { condition: |env| env.iteration < 2 };
            run |env| {
                let n = env.iteration;
                async move { Ok(Message::assistant(format!("pass {n}"))) }
            };
        };
        assert_eq!(agent.start("go").await.expect("turn").text(), Some("pass 2"));
    });
}
