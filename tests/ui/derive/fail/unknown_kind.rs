use brute::Middleware;

#[derive(Middleware)]
#[middleware(inside = Lop)]
struct Guard<A> {
    app: A,
}

fn main() {}
