#!/usr/bin/env bash
# The mutation check of the rooms that keep data or enforce a promise: cargo-mutants
# on one room at a time, each mutant tested only by the tests that cover that room.
#
# Install cargo-mutants once (into ~/.cargo/bin):
#     cargo install cargo-mutants --locked
# Run (at the lowest priority when others build on the machine):
#     nice -n 19 tests/mutants/run.sh ROOM...    (the rooms are listed in ROOMS below, or all)
# Environment: TIMEOUT (seconds per test run, default 300), BUILD_TIMEOUT (seconds per
# build, default 1200), OUT (default tests/mutants/out), ROOM_FILES (the files of the
# room to mutate instead of all of them, split at spaces: the big rooms are hours long,
# run them a few files at a time), MUTANTS_ARGS (more arguments for cargo-mutants, split
# at spaces: `-F REGEX` to test only the mutants whose names match, `--shard 1/8` for
# every eighth), ROOM_FILTER (test-name filters with ROOM_TESTS, split at spaces: none
# when unset), ROOM_TESTS (the
# `cargo test` arguments to use instead of the room's, split at spaces, with
# ROOM_PACKAGES for its packages: e.g. only the test binaries that hold one file's
# promises, without `--lib` when the file has no unit tests, which halves each
# mutant's build). Mutants run one at a time (in place, there is one tree).
#
# It mutates the work tree IN PLACE (so that builds reuse target/): do not edit or build
# in this work tree while it runs, and check `git status` after an interrupted run.
# Each room's outcome is in $OUT/<room>/mutants.out/ (missed.txt lists survivors).
# Copy every survivor into tests/mutants/RESULT.md, with the test that now kills it or
# the reason it is equivalent.
set -euo pipefail

cd "$(dirname "$0")/../.."
command -v cargo-mutants >/dev/null || {
    echo "cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2
    exit 2
}
if ! git diff --quiet -- brute/src brute-serve/src; then
    echo "brute/src or brute-serve/src has uncommitted changes: commit or stash them first" >&2
    exit 2
fi

# The pinned toolchain's cargo (rust-toolchain.toml) for every build cargo-mutants
# starts: without CARGO it may start another toolchain's, which rebuilds every
# dependency into target/.
CARGO=${CARGO:-$(rustup which cargo)}
export CARGO
TIMEOUT=${TIMEOUT:-300}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-1200}
OUT=${OUT:-tests/mutants/out}

# room -> the files mutated (ROOM_FILES, split at spaces, replaces them: a room is run a
# few files at a time), the packages whose tests run (a comma list for --test-package;
# `brute-suite` is the root package, whose tests are in tests/), the `cargo test`
# arguments selecting the binaries that cover the room, and FILTER, test-name filters
# for every selected binary (libtest runs the tests whose names contain any of them).
# The root package's binaries are rooms (`tests/README.md`), one module per file, so a
# filter such as `cost::` picks one file's tests out of its binary, and `cost` brute's
# unit tests of `cost/`; a filter applies to every selected binary, so a room whose
# binaries need different filters has none and runs them whole. A filter also narrows
# `--lib` to the room's own unit tests, and leaves out the binaries whose tests have no
# module in their names (`turn_tracing`, `ui`): the spans' fields, which `turn_tracing`
# checks, are run again without one (ROOM_TESTS="--lib --test=turn_tracing" ROOM_FILTER=).
# `--features=services` (tests/README.md, "Tiers"): the tests on PostgreSQL, and the
# binaries that need a service, run only with it; without it they are ignored or not
# built, and a mutant they would catch survives.
room() {
    FILTER=()
    case "$1" in
    redact)
        FILES=(brute/src/providers/redact.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=providers)
        ;;
    auth)
        FILES=(brute-serve/src/auth.rs)
        PACKAGES=brute-serve
        TESTS=(--lib --test=serve)
        ;;
    sandbox)
        FILES=(brute/src/tools/sandbox.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=tools)
        ;;
    pipeline)
        FILES=(brute/src/tools/pipeline/*.rs)
        # brute-serve's agui.rs holds the checks of the client's tools (`Verdict::Answer`,
        # a clash of names), tools_builtin.rs the undo snapshots `Snapshot` takes.
        PACKAGES=brute,brute-suite,brute-serve
        TESTS=(--features=services --lib --test=tools --test=session --test=turn_tracing --test=services
            --test=serve_services)
        ;;
    session)
        FILES=(brute/src/session/*.rs brute/src/session/*/*.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--features=services --lib --test=session --test=services)
        ;;
    providers)
        # The wire formats' codecs, the HTTP client's errors and limits, redaction.
        FILES=(brute/src/providers/*.rs brute/src/providers/*/*.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=providers)
        ;;
    model)
        # The model contract, fallback and the index of tool-call ids; the keys a model
        # hands to the tool pipeline are hidden by tests of the tools binary.
        FILES=(brute/src/model.rs brute/src/model/*.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=session --test=agent --test=tools)
        FILTER=(model tool_call_ids:: fallback:: stack:: turn_middleware:: adversarial_tools:: tool_pipeline::)
        ;;
    compaction)
        FILES=(brute/src/compaction/*.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=agent)
        FILTER=(compaction)
        ;;
    middleware)
        # The built-in layers, `Budget` among them, and the turn loop.
        FILES=(brute/src/middleware/*.rs brute/src/middleware/guard/*.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=agent --test=tools --test=providers --test=session)
        FILTER=(middleware stack:: turn_middleware:: budget:: call_limit:: guardrails:: handoff::
            retry:: fallback:: tool_retry:: approval)
        ;;
    cost)
        FILES=(brute/src/cost/mod.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--features=services --lib --test=session)
        FILTER=(cost budget::)
        ;;
    placement)
        # The order rules: trait bounds checked at the `use` line (tests/ui/agent/fail).
        FILES=(brute/src/stack/placement.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=ui --test=agent)
        ;;
    serve)
        # Idempotent turns, A2A, AG-UI and the chat-completions facade.
        FILES=(brute-serve/src/idempotency.rs brute-serve/src/a2a/*.rs brute-serve/src/agui/*.rs
            brute-serve/src/chat*.rs)
        PACKAGES=brute-serve
        TESTS=(--features=services --lib --test=serve --test=serve_services)
        ;;
    *)
        echo "unknown room $1 ($ROOMS)" >&2
        exit 2
        ;;
    esac
    if [ -n "${ROOM_FILES:-}" ]; then
        # shellcheck disable=SC2206 # a space-separated list of paths or globs
        FILES=($ROOM_FILES)
    fi
}

ROOMS="redact auth sandbox pipeline session providers model compaction middleware cost placement serve"
rooms=("$@")
if [ ${#rooms[@]} -eq 0 ]; then
    echo "usage: tests/mutants/run.sh ROOM... ($ROOMS, or all)" >&2
    exit 2
fi
if [ "${rooms[0]}" = all ]; then
    read -r -a rooms <<<"$ROOMS"
fi

status=0
for name in "${rooms[@]}"; do
    room "$name"
    if [ -n "${ROOM_TESTS:-}" ]; then
        # shellcheck disable=SC2206 # a space-separated list of cargo test arguments
        TESTS=($ROOM_TESTS)
        PACKAGES=${ROOM_PACKAGES:-$PACKAGES}
        # The room's filter was chosen for its binaries: other binaries take their own
        # (ROOM_FILTER, split at spaces), or none.
        # shellcheck disable=SC2206
        FILTER=(${ROOM_FILTER:-})
    fi
    args=()
    for file in "${FILES[@]}"; do
        args+=(--file "$file")
    done
    mkdir -p "$OUT/$name"
    echo "== $name: ${FILES[*]} (tests of $PACKAGES: ${TESTS[*]})"
    # cargo-mutants 27.1 runs its baseline (the tests on the unmutated tree) with the
    # mutated package only, whatever --test-package says (lab.rs: the baseline scenario
    # gets `PackageSelection::Explicit(all_mutated_packages)`), so a baseline of
    # `cargo test --package=brute --test=session_log` fails and the room stops before
    # its first mutant. So the script runs the baseline itself, with the same selection
    # the mutants get, and tells cargo-mutants to skip its own.
    pkg_args=()
    IFS=, read -r -a pkgs <<<"$PACKAGES"
    for pkg in "${pkgs[@]}"; do
        pkg_args+=(--package "$pkg")
    done
    # The filters reach the test binaries: after one `--` for cargo test, after two for
    # cargo-mutants (its own `--` ends its options, the rest goes to cargo test).
    filter=() mutants_filter=()
    if [ ${#FILTER[@]} -gt 0 ]; then
        filter=(-- "${FILTER[@]}")
        mutants_filter=(-- -- "${FILTER[@]}")
    fi
    echo "-- baseline: cargo test ${pkg_args[*]} ${TESTS[*]} ${filter[*]}"
    cargo test "${pkg_args[@]}" "${TESTS[@]}" "${filter[@]}" >"$OUT/$name/baseline.log" 2>&1 || {
        echo "the baseline failed (tests fail on the unmutated tree): see $OUT/$name/baseline.log" >&2
        exit 4
    }
    # The selection goes in as cargo arguments (`--cargo-arg`), not after `--`: cargo-mutants
    # adds what follows `--` to the test run only, so each mutant's build phase
    # (`cargo test --no-run`) would build every test binary of the root package.
    for arg in "${TESTS[@]}"; do
        args+=("--cargo-arg=$arg")
    done
    # Exit status 2 means survivors: go on with the next room, and say so at the end.
    # cargo-mutants is started itself, not as `cargo mutants`: that way the CARGO set
    # above is the one it builds with.
    # shellcheck disable=SC2086 # MUTANTS_ARGS is split at spaces on purpose
    cargo-mutants mutants --workspace --in-place --baseline=skip --timeout "$TIMEOUT" \
        --build-timeout "$BUILD_TIMEOUT" --output "$OUT/$name" "${args[@]}" \
        --test-package "$PACKAGES" ${MUTANTS_ARGS:-} "${mutants_filter[@]}" || status=$?
    git diff --quiet -- brute/src brute-serve/src || {
        echo "a mutant was left in the work tree: git checkout brute/src brute-serve/src" >&2
        exit 3
    }
done
exit "$status"
