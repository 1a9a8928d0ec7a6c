#!/usr/bin/env bash
# Compile time of brute's static stacks against tower's (issue 12, item 6).
#
# Builds two tiny binaries side by side, in a scratch directory, against the
# workspace's `brute` (by path, default features off: the stack machinery only) and
# the workspace's Cargo.lock, offline:
#
#   brute10  `brute_agent!` over ten `#[derive(Middleware)]` pass-through layers and a
#            closure model, one turn run in `main`;
#   tower10  ten pass-through `Layer` + `Service` pairs on `ServiceBuilder` over a
#            `service_fn`, one request sent in `main`.
#
# and measures, for each, interleaved and repeated (median of RUNS, default 3):
#
#   cold         an empty target directory: the crate and all its dependencies;
#   crate        dependencies built, the crate's own artifacts removed (`cargo clean -p`):
#                what the macros and the stack's types cost to compile;
#   incremental  `touch src/main.rs` and rebuild (dev profile, incremental).
#
# Usage: benches/compile/measure.sh [scratch-dir]     (RUNS=5 benches/compile/measure.sh)
# Needs only the crates already in cargo's cache (`--offline`).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/brute-compile.XXXXXX")}
RUNS=${RUNS:-3}
LAYERS=10
mkdir -p "$WORK"
cd "$WORK"

cp "$REPO/Cargo.lock" Cargo.lock
cp "$REPO/rust-toolchain.toml" rust-toolchain.toml
cat > Cargo.toml <<TOML
[workspace]
members = ["brute10", "tower10"]
resolver = "3"
TOML

mkdir -p brute10/src tower10/src
cat > brute10/Cargo.toml <<TOML
[package]
name = "brute10"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
brute = { path = "$REPO/brute", default-features = false }
tokio = { version = "1.48", default-features = false, features = ["rt"] }
TOML
cat > tower10/Cargo.toml <<TOML
[package]
name = "tower10"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
tower = { version = "0.5.3", default-features = false, features = ["util"] }
tokio = { version = "1.48", default-features = false, features = ["rt"] }
TOML

{
    echo '//! A 10-layer pass-through agent.'
    echo 'use brute::{Env, Error, Handler, Message, Middleware, brute_agent};'
    for i in $(seq 1 $LAYERS); do
        cat <<RS

/// Pass-through layer $i.
#[derive(Middleware)]
struct Pass$i<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Pass$i<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}
RS
    done
    echo
    echo 'fn main() {'
    echo '    let agent = brute_agent! {'
    for i in $(seq 1 $LAYERS); do echo "        use Pass$i;"; done
    echo '        run |_env| async { Ok(Message::assistant("ok")) };'
    echo '    };'
    echo '    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");'
    echo '    let outcome = runtime.block_on(agent.start("hi")).expect("a turn");'
    echo '    println!("{:?}", outcome.text());'
    echo '}'
} > brute10/src/main.rs

{
    echo '//! A 10-layer pass-through tower stack.'
    echo 'use std::task::{Context, Poll};'
    echo 'use tower::{Layer, Service, ServiceBuilder, ServiceExt};'
    for i in $(seq 1 $LAYERS); do
        cat <<RS

/// Pass-through layer $i.
#[derive(Clone)]
struct Pass${i}Layer;

impl<S> Layer<S> for Pass${i}Layer {
    type Service = Pass$i<S>;

    fn layer(&self, inner: S) -> Pass$i<S> {
        Pass$i { inner }
    }
}

/// The service of layer $i.
#[derive(Clone)]
struct Pass$i<S> {
    inner: S,
}

impl<S: Service<R>, R> Service<R> for Pass$i<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.inner.call(request)
    }
}
RS
    done
    echo
    echo 'fn main() {'
    echo '    let mut service = ServiceBuilder::new()'
    for i in $(seq 1 $LAYERS); do echo "        .layer(Pass${i}Layer)"; done
    echo '        .service_fn(|mut messages: Vec<String>| async move {'
    echo '            messages.push("ok".to_string());'
    echo '            Ok::<_, std::convert::Infallible>(messages)'
    echo '        });'
    echo '    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");'
    echo '    let reply = runtime'
    echo '        .block_on(async { service.ready().await?.call(vec!["hi".to_string()]).await })'
    echo '        .expect("a reply");'
    echo '    println!("{:?}", reply.last());'
    echo '}'
} > tower10/src/main.rs

# Seconds taken by `cargo build` of package $1 into its own target directory.
build() {
    local start end
    start=$(date +%s.%N)
    CARGO_TARGET_DIR="$WORK/target-$1" cargo build --offline -q -p "$1" >"$WORK/$1.log" 2>&1 ||
        { cat "$WORK/$1.log" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A times
echo "scratch: $WORK; $(cargo --offline --version); $RUNS runs each, interleaved"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$RUNS"); do
    for crate in brute10 tower10; do
        rm -rf "$WORK/target-$crate"
        times[$crate.cold]+="$(build $crate) "
        CARGO_TARGET_DIR="$WORK/target-$crate" cargo clean --offline -q -p "$crate"
        times[$crate.crate]+="$(build $crate) "
        touch "$crate/src/main.rs"
        times[$crate.incremental]+="$(build $crate) "
    done
done
# Both binaries run and answer.
"$WORK/target-brute10/debug/brute10"
"$WORK/target-tower10/debug/tower10"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for crate in brute10 tower10; do
    echo "$crate: $(cargo tree --offline -q -p "$crate" -e normal,build --prefix none | sed 's/ (\*)//' | sort -u | wc -l) crates in its build (itself included)"
done

echo
echo "| dev build, seconds (median of $RUNS) | brute_agent!, 10 layers | tower, 10 layers | ratio |"
echo "|---|---|---|---|"
for kind in cold crate incremental; do
    b=$(echo "${times[brute10.$kind]}" | tr ' ' '\n' | grep . | median)
    t=$(echo "${times[tower10.$kind]}" | tr ' ' '\n' | grep . | median)
    printf "| %s | %.2f | %.2f | %.1f |\n" "$kind" "$b" "$t" "$(echo "$b / $t" | bc -l)"
done
echo
for crate in brute10 tower10; do
    for kind in cold crate incremental; do echo "$crate $kind: ${times[$crate.$kind]}"; done
done
