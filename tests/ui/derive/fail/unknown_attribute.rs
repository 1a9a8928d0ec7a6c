use brute::Middleware;

#[derive(Middleware)]
#[middleware(inside_of = brute::kind::Loop)]
struct Layer<A> {
    app: A,
    #[middleware(defualt = 3)]
    max: u32,
}

fn main() {}
