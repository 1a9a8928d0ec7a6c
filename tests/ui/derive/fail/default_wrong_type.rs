use brute::Middleware;

#[derive(Middleware)]
struct Guard<A> {
    app: A,
    #[middleware(default = "ten")]
    max: u32,
}

fn main() {}
