use brute::{brute_agent, Loop};

fn main() {
    let _agent = brute_agent! {
        use Loop::While;
    };
}
