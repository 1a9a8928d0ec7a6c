#!/usr/bin/env bash
# brute-serve against a bare axum handler that streams the same bytes, side by side in
# one run, with wrk (a separate process) as the load generator. Not run by CI.
#
#   bash benches/serve/run.sh                  # builds the servers (release), then all rows
#   BENCH_ONLY=overhead bash benches/serve/run.sh   # or durable
#   BENCH_DURATION=8s BENCH_PG=0 BENCH_BIN=path/to/brute-serve-bench ...
#   bash benches/serve/instructions.sh          # instructions per request (callgrind), load-independent
#
# overhead: a zero-latency model, no session store; SSE turns, chat completions and
# streamed chat completions, one connection and 1,000; each row brute-serve then the
# bare handler (the limit), and their ratios.
# durable: a 20 ms model, a new session per turn in JSONL, SQLite and PostgreSQL (a
# private server on 127.0.0.1 started by .ci/postgres.sh), at 1, 1,000 and 5,000
# connections; p50 against the ideal (the model's 20 ms) and against the bare handler
# that sleeps 20 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v wrk >/dev/null; then
    echo "benches/serve/run.sh needs wrk: apt-get install -y wrk" >&2
    exit 1
fi
duration=${BENCH_DURATION:-8s}
only=${BENCH_ONLY:-all}
bin=${BENCH_BIN:-}
if [[ -z "$bin" ]]; then
    CARGO_INCREMENTAL=0 cargo build --release -q -p brute-serve-bench
    bin=target/release/brute-serve-bench
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
chmod 755 "$work" # the postgres user of .ci/postgres.sh reaches its folder inside
brute_port=${BENCH_PORT:-18431}
bare_port=$((brute_port + 1))
pg_port=$((brute_port + 2))
pg=0
if [[ ${BENCH_PG:-1} == 1 && $only != overhead ]]; then
    bash .ci/postgres.sh start "$work/pg" "$pg_port"
    export BRUTE_BENCH_PG="host=127.0.0.1 port=$pg_port user=postgres"
    pg=1
fi
"$bin" "$brute_port" "$bare_port" "$work/data" >"$work/server.log" 2>&1 &
server=$!
cleanup() {
    kill -INT "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    [[ $pg == 1 ]] && bash .ci/postgres.sh stop "$work/pg"
    rm -rf "$work"
}
trap cleanup EXIT
until grep -q '^ready' "$work/server.log"; do
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.2
done

run=0
# wrk_row PORT PATH BODY CONNECTIONS: "requests rps p50 p99 errors non-2xx"
wrk_row() {
    local threads=2
    [[ $4 -lt 2 ]] && threads=1
    run=$((run + 1))
    BENCH_PATH=$2 BENCH_BODY=$3 BENCH_TAG="r$run" \
        wrk -t"$threads" -c"$4" -d"$duration" --timeout 10s -s benches/serve/post.lua \
        "http://127.0.0.1:$1" | awk '/^RESULT/ { $1 = ""; print substr($0, 2) }'
}

echo "machine: $(nproc) cores; $(uptime)"
echo "wrk $duration per row, keep-alive; server: 2 tokio workers; $(date -u +%FT%TZ)"
echo

if [[ $only != durable ]]; then
    chat='{"model":"zero","messages":[{"role":"user","content":"go"}]}'
    stream='{"model":"zero","stream":true,"messages":[{"role":"user","content":"go"}]}'
    turn='{"input":"go","agent":"zero"}'
    echo "| zero-latency model | connections | brute-serve req/s | bare req/s | req/s ratio | brute-serve p50 | bare p50 | brute-serve p99 | bare p99 | p99 ratio | errors |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for c in 1 1000; do
        for row in "SSE turn|/v1/sessions/bench/turns|/v1/sessions/bench/turns|$turn" \
            "chat completion|/v1/chat/completions|/v1/chat/completions|$chat" \
            "chat completion, streamed|/v1/chat/completions|/stream/v1/chat/completions|$stream"; do
            IFS='|' read -r label path bare_path body <<<"$row"
            b=$(wrk_row "$brute_port" "$path" "$body" "$c")
            r=$(wrk_row "$bare_port" "$bare_path" "$body" "$c")
            awk -v l="$label" -v c="$c" -v b="$b" -v r="$r" 'BEGIN {
                split(b, x, " "); split(r, y, " ");
                printf "| %s | %d | %d | %d | %.2f× | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %.2f× | %d / %d |\n",
                    l, c, x[2], y[2], x[2] / y[2], x[3], y[3], x[4], y[4], x[4] / y[4], x[5] + x[6], y[5] + y[6] }'
        done
    done
    echo
fi

if [[ $only != overhead ]]; then
    turn20='{"input":"go","agent":"AGENT"}'
    agents="m20 jsonl sqlite"
    [[ $pg == 1 ]] && agents="$agents postgres"
    echo "| 20 ms model | connections | turns/s | p50 | p99 | p50 / ideal | p99 / ideal | p50 / bare | errors |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
    for c in 1 1000 5000; do
        r=$(wrk_row "$bare_port" "/slow/v1/sessions/x/turns" "$turn20" "$c")
        awk -v c="$c" -v r="$r" 'BEGIN { split(r, y, " ");
            printf "| bare handler (sleeps 20 ms) | %d | %d | %.1f ms | %.1f ms | %.2f× | %.2f× | 1.00× | %d |\n",
                c, y[2], y[3], y[4], y[3] / 20, y[4] / 20, y[5] + y[6] }'
        for agent in $agents; do
            b=$(wrk_row "$brute_port" "/v1/sessions/{n}/turns" "${turn20/AGENT/$agent}" "$c")
            label=$agent
            [[ $agent == m20 ]] && label="no session store"
            awk -v l="$label" -v c="$c" -v b="$b" -v r="$r" 'BEGIN {
                split(b, x, " "); split(r, y, " ");
                printf "| %s | %d | %d | %.1f ms | %.1f ms | %.2f× | %.2f× | %.2f× | %d |\n",
                    l, c, x[2], x[3], x[4], x[3] / 20, x[4] / 20, x[3] / y[3], x[5] + x[6] }'
        done
    done
    echo
fi
echo "after: $(uptime)"
