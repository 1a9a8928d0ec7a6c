use brute::Middleware;

#[derive(Middleware)]
enum Layer<A> {
    Only(A),
}

fn main() {}
