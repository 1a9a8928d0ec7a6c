#!/usr/bin/env bash
# The mutation check of the rooms that keep data or enforce a promise: cargo-mutants
# on one room at a time, each mutant tested only by the tests that cover that room.
#
# Install cargo-mutants once (into ~/.cargo/bin):
#     cargo install cargo-mutants --locked
# Run:
#     tests/mutants/run.sh ROOM...    (rooms: redact auth sandbox pipeline session, or all)
# Environment: TIMEOUT (seconds per test run, default 300), OUT (default
# tests/mutants/out). Mutants run one at a time (in place, there is one tree).
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

TIMEOUT=${TIMEOUT:-300}
OUT=${OUT:-tests/mutants/out}

# room -> the files mutated, the package whose tests run (`workspace` for the root
# package's tests/), and the `cargo test` arguments selecting the tests that cover
# the room.
room() {
    case "$1" in
    redact)
        FILES=(brute/src/providers/redact.rs)
        PACKAGE=brute
        # The unit tests of the file; tests/provider_empty_key.rs and
        # tests/adversarial_provider_canary.rs cover it too (see RESULT.md: the root
        # package's tests could not be selected with cargo-mutants 27.1).
        TESTS=(--lib -- providers::redact)
        ;;
    auth)
        FILES=(brute-serve/src/auth.rs)
        PACKAGE=brute-serve
        TESTS=(--lib --test auth_prefix --test serve)
        ;;
    sandbox)
        FILES=(brute/src/tools/sandbox.rs)
        PACKAGE=workspace
        TESTS=(--test adversarial_tools --test tools_builtin)
        ;;
    pipeline)
        FILES=(brute/src/tools/pipeline/*.rs)
        PACKAGE=workspace
        TESTS=(--test tool_pipeline --test approval --test session_crash --test tools)
        ;;
    session)
        FILES=(brute/src/session/*.rs)
        PACKAGE=workspace
        TESTS=(--test session_store --test session_log --test session_durability
            --test session_crash --test session_workers --test approval)
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
    args=()
    for file in "${FILES[@]}"; do
        args+=(--file "$file")
    done
    if [ "$PACKAGE" = workspace ]; then
        # The root package's tests. UNVERIFIED: with cargo-mutants 27.1 neither
        # --test-package brute-suite nor this ran them (it tested the mutated package
        # only, and `cargo test -p brute --test X` fails); see RESULT.md.
        args+=(--test-workspace=true)
    else
        args+=(--test-package "$PACKAGE")
    fi
    mkdir -p "$OUT/$name"
    echo "== $name: ${FILES[*]} (tests of $PACKAGE: ${TESTS[*]})"
    # Exit status 2 means survivors: go on with the next room, and say so at the end.
    cargo mutants --workspace --in-place --timeout "$TIMEOUT" \
        --output "$OUT/$name" "${args[@]}" \
        -- "${TESTS[@]}" || status=$?
    git diff --quiet -- brute/src brute-serve/src || {
        echo "a mutant was left in the work tree: git checkout brute/src brute-serve/src" >&2
        exit 3
    }
done
exit "$status"
