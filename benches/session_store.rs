//! placeholder until the benchmark lands in this branch
fn main() {}
