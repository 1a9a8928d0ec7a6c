#!/usr/bin/env bash
# The mutation check of the rooms that keep data or enforce a promise: cargo-mutants
# on one room at a time, each mutant tested only by the tests that cover that room.
#
# Install cargo-mutants once (into ~/.cargo/bin):
#     cargo install cargo-mutants --locked
# Run (at the lowest priority when others build on the machine):
#     nice -n 19 tests/mutants/run.sh ROOM...    (rooms: redact auth sandbox pipeline session, or all)
# Environment: TIMEOUT (seconds per test run, default 300), BUILD_TIMEOUT (seconds per
# build, default 1200), OUT (default tests/mutants/out), SESSION_FILES (the files of the
# session room to mutate, default every file of brute/src/session/ and its rooms: the room is hours long,
# run it a few files at a time), MUTANTS_ARGS (more arguments for cargo-mutants, split
# at spaces: `-F REGEX` to test only the mutants whose names match), ROOM_TESTS (the
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

# room -> the files mutated, the packages whose tests run (a comma list for
# --test-package; `brute-suite` is the root package, whose tests are in tests/), and the
# `cargo test` arguments selecting the tests that cover the room. With several
# packages, `--lib` runs the unit tests of those that have a library and `--test NAME`
# the test binaries of those that have one; a filter after `--` would apply to every
# binary, so the unit tests of `brute` run whole.
# `--features=services` (tests/README.md, "Tiers"): the tests on PostgreSQL, and the
# binaries that need a service, run only with it; without it they are ignored or not
# built, and a mutant they would catch survives.
room() {
    case "$1" in
    redact)
        FILES=(brute/src/providers/redact.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=provider_empty_key --test=adversarial_provider_canary)
        ;;
    auth)
        FILES=(brute-serve/src/auth.rs)
        PACKAGES=brute-serve
        TESTS=(--lib --test=auth_prefix --test=serve)
        ;;
    sandbox)
        FILES=(brute/src/tools/sandbox.rs)
        PACKAGES=brute,brute-suite
        TESTS=(--lib --test=adversarial_tools --test=tools_builtin)
        ;;
    pipeline)
        FILES=(brute/src/tools/pipeline/*.rs)
        # brute-serve's agui.rs holds the checks of the client's tools (`Verdict::Answer`,
        # a clash of names), tools_builtin.rs the undo snapshots `Snapshot` takes.
        PACKAGES=brute,brute-suite,brute-serve
        TESTS=(--features=services --lib --test=tool_pipeline --test=approval --test=session_crash --test=tools
            --test=turn_tracing --test=tools_builtin --test=tool_result_parts --test=agui)
        ;;
    session)
        # shellcheck disable=SC2206 # a space-separated list of paths or globs
        FILES=(${SESSION_FILES:-brute/src/session/*.rs brute/src/session/*/*.rs})
        PACKAGES=brute,brute-suite
        TESTS=(--features=services --lib --test=session_store --test=session_log --test=session_durability
            --test=session_crash --test=session_workers --test=approval --test=session_retention
            --test=session_fork --test=cost --test=session_reconnect --test=session_cancel
            --test=session_validate)
        ;;
    *)
        echo "unknown room $1 (redact auth sandbox pipeline session all)" >&2
        exit 2
        ;;
    esac
}

rooms=("$@")
if [ ${#rooms[@]} -eq 0 ]; then
    echo "usage: tests/mutants/run.sh ROOM... (redact auth sandbox pipeline session all)" >&2
    exit 2
fi
if [ "${rooms[0]}" = all ]; then
    rooms=(redact auth sandbox pipeline session)
fi

status=0
for name in "${rooms[@]}"; do
    room "$name"
    if [ -n "${ROOM_TESTS:-}" ]; then
        # shellcheck disable=SC2206 # a space-separated list of cargo test arguments
        TESTS=($ROOM_TESTS)
        PACKAGES=${ROOM_PACKAGES:-$PACKAGES}
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
    echo "-- baseline: cargo test ${pkg_args[*]} ${TESTS[*]}"
    cargo test "${pkg_args[@]}" "${TESTS[@]}" >"$OUT/$name/baseline.log" 2>&1 || {
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
        --test-package "$PACKAGES" ${MUTANTS_ARGS:-} || status=$?
    git diff --quiet -- brute/src brute-serve/src || {
        echo "a mutant was left in the work tree: git checkout brute/src brute-serve/src" >&2
        exit 3
    }
done
exit "$status"
