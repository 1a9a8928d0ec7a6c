use brute::Middleware;

#[derive(Middleware)]
struct Guard<A> {
    app: A,
    #[middleware(default)]
    name: String,
}

fn main() {}
