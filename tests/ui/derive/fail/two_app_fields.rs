use brute::Middleware;

#[derive(Middleware)]
struct TwoApps<A, B> {
    #[middleware(app)]
    first: A,
    #[middleware(app)]
    second: B,
}

fn main() {}
