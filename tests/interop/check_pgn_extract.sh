#!/usr/bin/env bash
# Reads a PGN file with pgn-extract and fails if pgn-extract complained about anything.
# pgn-extract exits 0 even when it cannot make a move, so its log is what is checked.
# Prints "<games> games" on success; prints the log and exits 1 otherwise.
set -euo pipefail
file=$1
bin=$(command -v pgn-extract || echo /usr/games/pgn-extract)
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
"$bin" -s -l "$log" -o "$out" "$file"
if [ -s "$log" ]; then
  echo "pgn-extract reported problems in $file:" >&2
  cat "$log" >&2
  exit 1
fi
games=$(grep -c '^\[Event ' "$out" || true)
echo "$games games"
