// A tool returns a `Result`: a bare `String` is one error at the return type.
/// Says hi.
#[brute::tool]
async fn hi() -> String {
    "hi".into()
}

fn main() {}
