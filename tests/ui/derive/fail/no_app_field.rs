use brute::Middleware;

#[derive(Middleware)]
struct Guard {
    max: u32,
}

fn main() {}
