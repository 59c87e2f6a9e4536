#!/usr/bin/env bash
# Checks that the docs stay true (docs/testing.md, "The documentation check"):
#
#   1. every relative link in README.md, ARCHITECTURE.md, docs/*.md and bench/*.md names a file
#      that exists, and a #anchor names a heading of that file (GitHub's anchors);
#   2. every docs/*.md is linked from README.md (its docs map);
#   3. every repository path README.md names in backticks exists;
#   4. the `bridle …` lines of each fenced block after a `<!-- check -->` comment (or
#      `<!-- check exit=N -->`) in README.md and docs/*.md run with the built binary, from the
#      repository's root, and exit 0 (or N);
#   5. every --flag in the block after `<!-- check-flags -->` in docs/cli.md is in that
#      subcommand's --help.
#
#   scripts/check-docs.sh                      builds target/debug/bridle if needed, then checks
#   BRIDLE_BIN=target/release/bridle ...       checks with that binary (no build)
set -euo pipefail
cd "$(dirname "$0")/.."
# Headings' anchors keep letters of any script: classify characters as UTF-8.
export LC_ALL=C.UTF-8

failures=0
fail() {
  printf 'check-docs: %s\n' "$*" >&2
  failures=$((failures + 1))
}

# FILE's lines outside fenced code blocks, each as "LINENO<TAB>TEXT".
prose() {
  awk '
    /^[ ]*(```|~~~)/ { fenced = !fenced; next }
    !fenced { print NR "\t" $0 }
  ' "$1"
}

# FILE's link targets outside code, each as "LINENO<TAB>TARGET": inline links and images
# `[text](target "title")`, and reference definitions `[name]: target`.
links() {
  prose "$1" | awk -F '\t' '
    {
      line = $1
      text = substr($0, index($0, "\t") + 1)
      gsub(/`[^`]*`/, "", text)
      if (match(text, /^ ? ? ?[[][^]]+[]]:[ ]+[^ ]+/)) {
        ref = substr(text, RSTART, RLENGTH)
        sub(/^[^]]*[]]:[ ]+/, "", ref)
        print line "\t" ref
      }
      while (match(text, /[]][(][^)]*[)]/)) {
        target = substr(text, RSTART + 2, RLENGTH - 3)
        text = substr(text, RSTART + RLENGTH)
        sub(/^[ ]+/, "", target)
        sub(/^</, "", target)
        sub(/[> ].*$/, "", target)
        if (target != "") print line "\t" target
      }
    }
  '
}

# The GitHub anchors of FILE's headings, one a line: the heading's text without its markup,
# lower case, without punctuation, spaces as "-"; a repeated one gets "-1", "-2", ….
anchors() {
  prose "$1" |
    sed -nE 's/^[0-9]+\t {0,3}#{1,6}[[:space:]]+(.*)$/\1/p' |
    sed -E 's/[[:space:]]+#+[[:space:]]*$//; s/[[:space:]]+$//' |
    sed -E 's/!?\[([^]]*)\]\([^)]*\)/\1/g; s/<[^>]*>//g; s/[`*]//g' |
    sed -E 's/.*/\L&/; s/[^[:alnum:] _-]//g; s/ /-/g' |
    awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}

# Part 1: links. The files linked from README.md are kept for part 2.
declare -A anchors_of=()
readme_targets=""
link_count=0
for file in README.md ARCHITECTURE.md docs/*.md bench/*.md; do
  dir=$(dirname "$file")
  while IFS=$'\t' read -r line target; do
    case $target in
      http://* | https://* | mailto:*) continue ;;
    esac
    link_count=$((link_count + 1))
    path=${target%%#*}
    anchor=""
    if [[ $target == *"#"* ]]; then anchor=${target#*#}; fi
    resolved=$file
    if [ -n "$path" ]; then resolved=$(realpath -m --relative-to=. "$dir/$path"); fi
    if [[ $resolved == ../* ]]; then
      fail "$file:$line: $target points outside the repository"
      continue
    fi
    if [ ! -e "$resolved" ]; then
      fail "$file:$line: $target: no file $resolved"
      continue
    fi
    if [ "$file" = README.md ]; then readme_targets+="$resolved"$'\n'; fi
    [ -n "$anchor" ] || continue
    if [[ $resolved != *.md ]]; then
      fail "$file:$line: $target: an anchor into a file that is not Markdown"
      continue
    fi
    if [ -z "${anchors_of[$resolved]+set}" ]; then
      anchors_of[$resolved]=$(anchors "$resolved")
    fi
    if ! grep -qxF -- "$anchor" <<<"${anchors_of[$resolved]}"; then
      fail "$file:$line: $target: no heading with the anchor #$anchor in $resolved"
    fi
  done < <(links "$file")
done
echo "links: $link_count checked"

# Part 2: the docs map.
for doc in docs/*.md; do
  grep -qxF -- "$doc" <<<"$readme_targets" || fail "README.md: $doc is not in the docs map"
done

# Part 3: paths the README names in backticks.
path_count=0
while IFS= read -r path; do
  path_count=$((path_count + 1))
  [ -e "$path" ] || fail "README.md: \`$path\` does not exist"
done < <(prose README.md | grep -oE '`[^`]+`' | tr -d '`' |
  grep -E '^(crates|docs|bench|scripts|web|tests|contracts|fuzz|python)/[^ *…<>{}]*$' | sort -u)
echo "README paths: $path_count checked"

# The binary for parts 4 and 5.
if [ -z "${BRIDLE_BIN:-}" ]; then
  cargo build --quiet -p bridle --locked
  BRIDLE_BIN="${CARGO_TARGET_DIR:-target}/debug/bridle"
fi
[ -x "$BRIDLE_BIN" ] || { fail "no bridle binary at $BRIDLE_BIN"; exit 1; }
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
ln -s "$(realpath "$BRIDLE_BIN")" "$bin_dir/bridle"

# Part 4: the commands of the blocks marked `<!-- check -->`, as "FILE:LINE<TAB>EXIT<TAB>COMMAND".
marked_commands() {
  awk '
    /^<!-- check( exit=[0-9]+)? -->[ ]*$/ {
      want = 0
      if (match($0, /exit=[0-9]+/)) want = substr($0, RSTART + 5, RLENGTH - 5)
      armed = 1
      next
    }
    armed && !inside && /^[ ]*(```|~~~)/ { inside = 1; next }
    inside && /^[ ]*(```|~~~)/ { inside = 0; armed = 0; next }
    inside {
      if (pending == "") start = FNR
      text = pending $0
      if (text ~ /\\$/) { pending = substr(text, 1, length(text) - 1); next }
      pending = ""
      if (text ~ /^bridle /) print FILENAME ":" start "\t" want "\t" text
      next
    }
    armed && !/^[ ]*$/ { armed = 0 }
  ' "$@"
}
command_count=0
while IFS=$'\t' read -r where want command; do
  command_count=$((command_count + 1))
  set +e
  output=$(PATH="$bin_dir:$PATH" timeout 60 bash -c "$command" 2>&1 </dev/null)
  status=$?
  set -e
  if [ "$status" != "$want" ]; then
    fail "$where: \`$command\` exited $status, not $want"
    printf '%s\n' "$output" | tail -n 20 >&2
  fi
done < <(marked_commands README.md docs/*.md)
echo "commands: $command_count run"

# Part 5: the flags of docs/cli.md's synopsis against each subcommand's --help.
declare -A help_of=()
flag_count=0
subcommand=""
while IFS= read -r text; do
  if [[ $text == bridle\ * ]]; then
    subcommand=""
    for word in ${text#bridle }; do
      [[ $word =~ ^[a-z][a-z-]*$ ]] || break
      subcommand+="${subcommand:+ }$word"
    done
  elif [[ $text == global:* ]]; then
    subcommand=""
  fi
  key="bridle $subcommand"
  if [ -z "${help_of[$key]+set}" ]; then
    # shellcheck disable=SC2086 # the subcommand's words are separate arguments
    help_of[$key]=$("$BRIDLE_BIN" $subcommand --help 2>&1) ||
      fail "docs/cli.md: \`bridle $subcommand --help\` failed"
  fi
  for flag in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$text" || true); do
    flag_count=$((flag_count + 1))
    grep -qE -- "(^|[ ,])$flag([ =,]|\$)" <<<"${help_of[$key]}" ||
      fail "docs/cli.md: $flag is not in \`bridle $subcommand --help\`"
  done
done < <(awk '
  /^<!-- check-flags -->[ ]*$/ { armed = 1; next }
  armed && !inside && /^[ ]*(```|~~~)/ { inside = 1; next }
  inside && /^[ ]*(```|~~~)/ { exit }
  inside { print }
' docs/cli.md)
[ "$flag_count" -gt 0 ] || fail "docs/cli.md: no flags found after <!-- check-flags -->"
echo "CLI flags: $flag_count checked"

if [ "$failures" -gt 0 ]; then
  echo "check-docs: $failures problem(s)" >&2
  exit 1
fi
echo "docs: ok"
