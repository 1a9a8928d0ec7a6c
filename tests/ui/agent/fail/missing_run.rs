use brute::{brute_agent, middleware::Loop};

fn main() {
    let _agent = brute_agent! {
        use Loop::While;
    };
}
