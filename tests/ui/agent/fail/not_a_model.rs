use brute::brute_agent;

fn main() {
    let _agent = brute_agent! {
        run 42;
    };
}
