#!/usr/bin/env bash
# A private PostgreSQL server for brute's session-store tests and benchmarks.
#
#   .ci/postgres.sh install                  install Debian's postgresql if missing (run by
#                                            `cargo xtask setup` / `cargo xtask test` only)
#   .ci/postgres.sh start DIR PORT [PID]     initdb in DIR, listen on 127.0.0.1:PORT;
#                                            with PID, stop and remove DIR when PID exits;
#                                            fails, installing nothing, without PostgreSQL
#   .ci/postgres.sh stop DIR                 stop the server of DIR and remove DIR
#
# Idempotent: `install` does nothing when the server binaries are there; `start` on a
# DIR that already runs a server does nothing. As root (CI), the server runs as the
# `postgres` user, since initdb refuses to run as root. Connect with
# `host=127.0.0.1 port=PORT user=postgres dbname=postgres` (trust authentication on
# 127.0.0.1 only).
set -euo pipefail

bindir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            echo "$dir"
        fi
    done | sort -V | tail -n 1
}

install() {
    if [[ -n "$(bindir)" ]]; then
        return 0
    fi
    if [[ "$(id -u)" != 0 ]]; then
        echo "postgres.sh: PostgreSQL is not installed and this is not root: install Debian's postgresql package" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    # The package starts a cluster of its own on 5432; the tests use private ones.
    if command -v pg_lsclusters >/dev/null; then
        pg_lsclusters -h 2>/dev/null | while read -r version name _; do
            pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
        done
    fi
    [[ -n "$(bindir)" ]] || { echo "postgres.sh: installing postgresql gave no initdb" >&2; exit 1; }
}

# Runs a command as the server's user: `postgres` when we are root, else ourselves.
as_server() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local dir=$1 port=$2 watch=${3:-}
    local bin
    bin=$(bindir)
    # The tests start servers through here: they never install (no test changes the host).
    if [[ -z "$bin" ]]; then
        echo "postgres.sh: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run \`cargo xtask test\` (or \`cargo xtask setup\`), which installs it" >&2
        exit 1
    fi
    mkdir -p "$dir"
    if [[ "$(id -u)" == 0 ]]; then
        chown postgres: "$dir"
    fi
    if [[ -f "$dir/data/postmaster.pid" ]] && as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        return 0
    fi
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        as_server "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    if [[ -n "$watch" ]]; then
        # Stops the server when the process that asked for it is gone, however it ended.
        nohup setsid bash -c "
            while kill -0 $watch 2>/dev/null; do sleep 0.5; done
            $(declare -f as_server)
            as_server '$bin/pg_ctl' -D '$dir/data' -m immediate stop >/dev/null 2>&1
            rm -rf '$dir'
        " >/dev/null 2>&1 </dev/null &
    fi
}

stop() {
    local dir=$1 bin
    bin=$(bindir)
    if [[ -n "$bin" && -d "$dir/data" ]]; then
        as_server "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:?DIR}" "${3:?PORT}" "${4:-}" ;;
    stop) stop "${2:?DIR}" ;;
    *) echo "usage: $0 install | start DIR PORT [PID] | stop DIR" >&2; exit 2 ;;
esac
