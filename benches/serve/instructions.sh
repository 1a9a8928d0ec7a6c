#!/usr/bin/env bash
# Instructions per request, independent of the machine's load: the bench servers under
# callgrind, once with no request and once with `wrk -c1 -d3s` on one route; the
# difference of the process totals divided by the requests served.
#
#   bash benches/serve/instructions.sh [path/to/brute-serve-bench] [port]
#
# Routes: an SSE turn on brute-serve (`turn`) and on the bare handler (`bare`), a chat
# completion (`chat`) and a streamed one (`stream`) on brute-serve.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release/brute-serve-bench}
port=${2:-18700}
command -v valgrind >/dev/null || { echo "needs valgrind: apt-get install -y valgrind" >&2; exit 1; }

# measure MODE: "requests instructions" of one run
measure() {
    local work n=0 path="" body="" target=$port vg
    work=$(mktemp -d)
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" "$port" $((port + 1)) "$work/data" >"$work/log" 2>&1 &
    vg=$!
    until grep -q '^ready' "$work/log" 2>/dev/null; do
        kill -0 "$vg" 2>/dev/null || { cat "$work/log" >&2; return 1; }
        sleep 0.5
    done
    case $1 in
        turn) path=/v1/sessions/b/turns body='{"input":"go","agent":"zero"}' ;;
        bare) path=/v1/sessions/b/turns body='{"input":"go","agent":"zero"}' target=$((port + 1)) ;;
        chat) path=/v1/chat/completions body='{"model":"zero","messages":[{"role":"user","content":"go"}]}' ;;
        stream) path=/v1/chat/completions body='{"model":"zero","stream":true,"messages":[{"role":"user","content":"go"}]}' ;;
    esac
    if [[ -n $path ]]; then
        n=$(BENCH_PATH=$path BENCH_BODY=$body wrk -t1 -c1 -d3s --timeout 10s -s benches/serve/post.lua \
            "http://127.0.0.1:$target" | awk '/^RESULT/ { print $2 }')
    else
        sleep 3
    fi
    kill -INT "$vg"
    wait "$vg"
    echo "$n $(grep -o 'Collected : [0-9]*' "$work/log" | awk '{ print $3 }')"
    rm -rf "$work"
}

read -r _ idle < <(measure none)
echo "| route | requests | instructions per request |"
echo "|---|---:|---:|"
for mode in turn bare chat stream; do
    read -r n total < <(measure "$mode")
    echo "| $mode | $n | $(((total - idle) / n)) |"
done
