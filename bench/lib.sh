# Shared by the bench scripts (source it, with ROOT set to the repository): the load generator
# and helpers for servers started in the background.

# The load generator every HTTP bench uses, pinned.
OHA_VERSION="1.14.0"

# `oha_bin`: the path of oha — $OHA when set, the one on PATH, else the one in
# ROOT/target/bench-tools (installed there with cargo the first time).
oha_bin() {
    local tools="$ROOT/target/bench-tools"
    if [ -n "${OHA:-}" ]; then
        echo "$OHA"
    elif command -v oha >/dev/null; then
        command -v oha
    else
        if [ ! -x "$tools/bin/oha" ]; then
            echo "installing oha $OHA_VERSION into $tools" >&2
            cargo install oha --version "$OHA_VERSION" --locked --root "$tools" >&2
        fi
        echo "$tools/bin/oha"
    fi
}

# `url_in LOG [TRIES]`: the first http:// address a server printed into LOG, waiting up to
# TRIES × 0.1 s (default 100) for it; fails, showing the log, when none comes.
url_in() {
    local log="$1" tries="${2:-100}"
    for _ in $(seq 1 "$tries"); do
        if grep -qo 'http://[0-9.:]*' "$log" 2>/dev/null; then
            grep -o 'http://[0-9.:]*' "$log" | head -1
            return
        fi
        sleep 0.1
    done
    echo "server did not start: $(cat "$log")" >&2
    return 1
}
