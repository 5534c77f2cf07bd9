#!/usr/bin/env bash
# The cross builds' checks, run by .ci/run: contrib/cross/check.sh windows|arm64.
# Expects the platform's relay (the release build, or DGT_RELAY_WINDOWS / DGT_RELAY_ARM64) and the `platform` runner of the e2e
# tests (target/debug/platform). Checks, through the platform's runner (wine-relay or
# qemu-relay):
#   windows: `check-config` on relay.example.toml; the demo answering HTTP with moves;
#            `run --port COM5` on a simulated board's pty, the game exact;
#   arm64:   the demo answering HTTP with moves; `run --port` on a simulated board's pty,
#            the game exact.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
platform=$1
case $platform in
  windows) runner=contrib/cross/wine-relay; exit_note=(--no-clean-exit) ;;
  arm64) runner=contrib/cross/qemu-relay; exit_note=() ;;
  *) echo "unknown platform $platform" >&2; exit 2 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/dgt-cross-$platform.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ "$platform" = windows ]; then
  echo "-- check-config under Wine"
  "$runner" check-config relay.example.toml
fi

echo "-- the demo answering HTTP, its boards relaying moves"
# One attempt: the demo started through the runner, polled until /live/ answers and four
# moves are relayed (at most $1 s, or until the demo exits). Sets addr and moves.
demo_attempt() {
  local limit=$1 tag=$2 demo
  "$runner" demo --boards 2 --speed 50 --listen 127.0.0.1:0 --data "$work/demo-data-$tag" \
    > "$work/demo-$tag.out" 2> "$work/demo-$tag.err" &
  demo=$!
  addr=
  moves=0
  for _ in $(seq 1 "$limit"); do
    [ -z "$addr" ] && addr=$(sed -n '1s|^dgt-relay listening on http://||p' "$work/demo-$tag.out")
    if [ -n "$addr" ]; then
      live=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/live/" || true)
      moves=$(curl -s "http://$addr/api/boards" | grep -o '"san"' | wc -l || true)
      [ "$live" = 200 ] && [ "$moves" -ge 4 ] && break
    fi
    if ! kill -0 "$demo" 2>/dev/null; then
      echo "the demo exited before relaying moves"
      break
    fi
    sleep 1
  done
  kill "$demo" 2>/dev/null || true
  wait "$demo" 2>/dev/null || true
}
demo_attempt 180 first
if [ -z "$addr" ] && [ "$platform" = windows ]; then
  # A Wine process started as the previous one's server winds down can hang before the
  # program runs (seen on a loaded machine: no output at all). The demo never started
  # then; it gets one more start, on a new server, and both attempts' logs are shown.
  echo "the demo under Wine printed no address in 180 s (stdout: $(wc -c < "$work/demo-first.out") bytes," \
    "stderr: $(wc -c < "$work/demo-first.err") bytes); a second start on a new Wine server"
  tail -n 20 "$work/demo-first.err"
  WINEPREFIX=${WINEPREFIX:-$root/target/wine-prefix} "${WINESERVER:-$(command -v wineserver || echo /usr/lib/wine/wineserver64)}" -k 2>/dev/null || true
  demo_attempt 180 second
  tag=second
else
  tag=first
fi
if [ -z "$addr" ] || [ "$moves" -lt 4 ]; then
  echo "FAIL: the demo did not answer with moves (address '${addr}', $moves moves); its output and log:"
  tail -n 5 "$work/demo-$tag.out"
  tail -n 20 "$work/demo-$tag.err"
  exit 1
fi
echo "demo on http://$addr: /live/ answered, $moves moves relayed"

echo "-- run --port on a simulated board, the game checked against its truth"
target/debug/platform --relay "$runner" "${exit_note[@]}"
