# Shared by the bench scripts (source it): helpers for servers started in the background.

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
