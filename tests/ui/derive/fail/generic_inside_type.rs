// An option may be generic only as a whole: the derive finds the parameter inside
// `Vec<T>`, `fn(T)` and `Box<dyn Fn(&T)>` from the syntax tree, not by searching text
// (`Tx` below is a different type and is fine).
use brute::Middleware;

struct Tx;

#[derive(Middleware)]
struct Layer<A, T> {
    app: A,
    list: Vec<T>,
    callback: fn(T),
    check: Box<dyn Fn(&T) -> bool + Send + Sync>,
    name: Option<Tx>,
}

fn main() {}
