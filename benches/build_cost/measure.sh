#!/usr/bin/env bash
# Build cost of a 10-layer pass-through agent on brute against the same 10 layers on
# tower, in a scratch directory, offline (the crates must be in cargo's cache; the
# workspace's Cargo.lock and toolchain are copied, brute is used by path):
#
#   brute-default  `brute_agent!` over ten `#[derive(Middleware)]` pass-through layers
#                  and a closure model, brute with its default features;
#   brute-minimal  the same source, brute with `default-features = false`;
#   tower          ten pass-through `Layer` + `Service` pairs on `ServiceBuilder` over
#                  a `service_fn`.
#
# Each is a crate in its own workspace with its own target directory (so that no
# feature is unified between them), built in the dev profile and measured, the three
# interleaved and repeated (median of RUNS, default 3):
#
#   clean        an empty target directory: the crate and all its dependencies;
#   crate        dependencies built, the crate's own artifacts removed (`cargo clean -p`):
#                what the macros and the stack's types cost to compile;
#   incremental  one line of `src/main.rs` changed (the model's answer), rebuilt.
#
# Each binary then runs one turn and must print its answer. The script prints the
# load average at the start and the end, the crate count of each build, every run and
# a markdown table of the medians.
#
# Usage: benches/build_cost/measure.sh [scratch-dir]      (RUNS=1 for one run each)
#
# BASELINE=/path/to/another/checkout adds a fourth crate, brute-baseline: the same
# source on that checkout's brute with its default features, measured in the same run
# (under the same load) as the others, e.g. the main branch before a change.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/brute-build-cost.XXXXXX")}
RUNS=${RUNS:-3}
LAYERS=10
CRATES=(brute-default brute-minimal tower)
BASELINE=${BASELINE:-}
if [ -n "$BASELINE" ]; then
    BASELINE=$(cd "$BASELINE" && pwd)
    CRATES+=(brute-baseline)
fi
unset CARGO_TARGET_DIR
mkdir -p "$WORK"
cd "$WORK"

# A crate $1 in its own workspace, with the dependency lines $2.
scaffold() {
    mkdir -p "$1/src"
    cp "$REPO/Cargo.lock" "$1/Cargo.lock"
    cp "$REPO/rust-toolchain.toml" "$1/rust-toolchain.toml"
    cat > "$1/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.1.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
$2
TOML
}

scaffold brute-default "brute = { path = \"$REPO/brute\" }
tokio = { version = \"1.48\", default-features = false, features = [\"rt\"] }"
scaffold brute-minimal "brute = { path = \"$REPO/brute\", default-features = false }
tokio = { version = \"1.48\", default-features = false, features = [\"rt\"] }"
if [ -n "$BASELINE" ]; then
    scaffold brute-baseline "brute = { path = \"$BASELINE/brute\" }
tokio = { version = \"1.48\", default-features = false, features = [\"rt\"] }"
fi
scaffold tower "tower = { version = \"0.5.3\", default-features = false, features = [\"util\"] }
tokio = { version = \"1.48\", default-features = false, features = [\"rt\"] }"

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
    echo '        run |_env| async { Ok(Message::assistant("answer 0")) };'
    echo '    };'
    echo '    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");'
    echo '    let outcome = runtime.block_on(agent.start("hi")).expect("a turn");'
    echo '    println!("{}", outcome.text().expect("the answer"));'
    echo '}'
} > brute-default/src/main.rs
cp brute-default/src/main.rs brute-minimal/src/main.rs
[ -z "$BASELINE" ] || cp brute-default/src/main.rs brute-baseline/src/main.rs

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
    echo '            messages.push("answer 0".to_string());'
    echo '            Ok::<_, std::convert::Infallible>(messages)'
    echo '        });'
    echo '    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");'
    echo '    let reply = runtime'
    echo '        .block_on(async { service.ready().await?.call(vec!["hi".to_string()]).await })'
    echo '        .expect("a reply");'
    echo '    println!("{}", reply.last().expect("the answer"));'
    echo '}'
} > tower/src/main.rs

# Seconds taken by `cargo build` of crate $1.
build() {
    local start end
    start=$(date +%s.%N)
    (cd "$WORK/$1" && cargo build --offline -q >"$WORK/$1.log" 2>&1) ||
        { cat "$WORK/$1.log" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A times
echo "scratch: $WORK; $(cd "$WORK/tower" && cargo --offline --version); dev profile; $RUNS run(s) each, interleaved"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$RUNS"); do
    for crate in "${CRATES[@]}"; do
        rm -rf "$WORK/$crate/target"
        times[$crate.clean]+="$(build "$crate") "
        (cd "$WORK/$crate" && cargo clean --offline -q -p "$crate")
        times[$crate.crate]+="$(build "$crate") "
        # The one-line change: the model's answer.
        sed -i "s/answer [0-9]*/answer $run/" "$crate/src/main.rs"
        times[$crate.incremental]+="$(build "$crate") "
        answer=$("$WORK/$crate/target/debug/$crate")
        [ "$answer" = "answer $run" ] || { echo "$crate answered '$answer'" >&2; exit 1; }
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A units
for crate in "${CRATES[@]}"; do
    units[$crate]=$(cd "$WORK/$crate" && cargo tree --offline -q -e normal,build --prefix none |
        sed 's/ (\*)//' | sort -u | wc -l)
done

echo
echo "| dev build, seconds (median of $RUNS) | brute, default features | brute, no default features | tower | brute default / tower | brute no default / tower |"
echo "|---|---|---|---|---|---|"
for kind in clean crate incremental; do
    d=$(echo "${times[brute-default.$kind]}" | tr ' ' '\n' | grep . | median)
    m=$(echo "${times[brute-minimal.$kind]}" | tr ' ' '\n' | grep . | median)
    t=$(echo "${times[tower.$kind]}" | tr ' ' '\n' | grep . | median)
    case $kind in
        clean) label="clean, all dependencies" ;;
        crate) label="the agent crate alone" ;;
        *) label="incremental, one-line change" ;;
    esac
    printf "| %s | %.2f | %.2f | %.2f | %.1f | %.1f |\n" "$label" "$d" "$m" "$t" \
        "$(echo "$d / $t" | bc -l)" "$(echo "$m / $t" | bc -l)"
done
printf "| crates in the build (itself included) | %s | %s | %s | | |\n" \
    "${units[brute-default]}" "${units[brute-minimal]}" "${units[tower]}"
if [ -n "$BASELINE" ]; then
    echo
    echo "| dev build, seconds (median of $RUNS) | brute-baseline ($BASELINE), default features | brute, default features | this / baseline |"
    echo "|---|---|---|---|"
    for kind in clean crate incremental; do
        b=$(echo "${times[brute-baseline.$kind]}" | tr ' ' '\n' | grep . | median)
        d=$(echo "${times[brute-default.$kind]}" | tr ' ' '\n' | grep . | median)
        printf "| %s | %.2f | %.2f | %.2f |\n" "$kind" "$b" "$d" "$(echo "$d / $b" | bc -l)"
    done
    printf "| crates | %s | %s | |\n" "${units[brute-baseline]}" "${units[brute-default]}"
fi
echo
for crate in "${CRATES[@]}"; do
    for kind in clean crate incremental; do echo "$crate $kind: ${times[$crate.$kind]}"; done
done
