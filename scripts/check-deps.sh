#!/usr/bin/env bash
# Checks that the workspace's dependencies point the way ARCHITECTURE.md draws them:
#   bridle-core    no async runtime, HTTP or SQL;
#   bridle-wire    serde and serde_json only;
#   bridle-engine  no SQL driver and no HTTP server of its own (the store and the providers are
#                  its crates; only they hold the drivers), no HTTP server anywhere below it;
#   bridle         one SQLite driver in the build (rusqlite; sqlx for PostgreSQL only).
# Fails with the offending crate named.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
deps() { # all normal (non-dev, non-build) dependencies of $1, one name per line
  cargo tree --locked -p "$1" -e normal --prefix none --format '{p}' "${@:2}" | awk '{print $1}' | sort -u
}
refuse() { # $1 crate, $2 what, $3 regex of forbidden names, then cargo tree flags
  local crate="$1" what="$2" pattern="$3"
  local found
  found="$(deps "$crate" "${@:4}" | grep -Ex "$pattern" || true)"
  if [ -n "$found" ]; then
    echo "$crate depends on $what: $(echo "$found" | tr '\n' ' ')" >&2
    fail=1
  fi
}

refuse bridle-core "a runtime, HTTP or SQL" 'tokio|hyper|reqwest|axum|sqlx|rusqlite|libsqlite3-sys|mio'
extra="$(deps bridle-wire --depth 1 | grep -Evx 'bridle-wire|serde|serde_json' || true)"
if [ -n "$extra" ]; then echo "bridle-wire depends on more than serde: $extra" >&2; fail=1; fi
refuse bridle-engine "a SQL driver directly" 'sqlx|rusqlite|libsqlite3-sys' --depth 1
# reqwest (the webhook and provider client) brings hyper's client side; nothing else may.
refuse bridle-engine "an HTTP server" 'axum|hyper|hyper-util|h2|tower-http' --prune reqwest
refuse bridle "a second SQLite driver" 'sqlx-sqlite'
refuse bridle-server "a second SQLite driver" 'sqlx-sqlite' -e normal,dev

if [ "$fail" = 0 ]; then echo "dependency directions hold"; fi
exit "$fail"
