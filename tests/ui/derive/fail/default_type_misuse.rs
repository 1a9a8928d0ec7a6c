// `default_type` belongs on a generic option, and a generic option's `default` needs
// its `default_type`.
use brute::Middleware;

#[derive(Middleware)]
struct Layer<A, T, U> {
    app: A,
    #[middleware(default_type = u8)]
    count: u32,
    #[middleware(default = 3u8)]
    tools: T,
    #[middleware(default_type = String, default = String::from("x"))]
    label: U,
}

fn main() {}
