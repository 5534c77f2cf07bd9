#!/usr/bin/env bash
# Real-browser tests of the live page (issue 7), the operator's console and the spectators'
# page (issue 18), the page's layout at 1366x768 and 390x844 (issue 31), and a whole event
# run from the console (issue 28, event.test.mjs, which starts a relay and a Lichess stand-in
# of its own): builds the host, starts `dgt-relay demo` on a free loopback port with an
# admin token of its own, runs live-page.test.mjs then console.test.mjs in Debian's headless
# Chromium (playwright-core), saves screenshots and reports in tests/browser/artifacts/
# (ignored by git), and stops the demo.
#
# Installs what it needs: Debian's chromium (and a font with chess glyphs) when missing, and
# the npm packages from package-lock.json. Environment knobs: CARGO_TARGET_DIR, CHROMIUM,
# DEMO_BOARDS (default 6), DEMO_SPEED (default 20), ARTIFACTS, RELAY_PROFILE (debug or
# release; CI passes release, which it has already built).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
artifacts="${ARTIFACTS:-$here/artifacts}"
chromium="${CHROMIUM:-/usr/bin/chromium}"
boards="${DEMO_BOARDS:-6}"
speed="${DEMO_SPEED:-20}"
target="${CARGO_TARGET_DIR:-$root/target}"

log() { printf '[browser-test] %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  log "installing $* from Debian"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

# 1. Tools.
if [ ! -x "$chromium" ]; then
  apt_install chromium
fi
if command -v fc-list >/dev/null && ! fc-list | grep -qi 'DejaVu Sans'; then
  apt_install fonts-dejavu-core # chess glyphs for the pieces
fi
if command -v fc-list >/dev/null && ! fc-list | grep -qi 'Noto Color Emoji'; then
  apt_install fonts-noto-color-emoji # the federations' flags on the spectators' page
fi
command -v node >/dev/null || { echo "node is needed (the machine's Node.js)" >&2; exit 1; }
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

# 2. The host.
profile="${RELAY_PROFILE:-debug}"
case "$profile" in
  debug) build_flags=() ;;
  release) build_flags=(--release) ;;
  *) echo "RELAY_PROFILE must be debug or release, not '$profile'" >&2; exit 2 ;;
esac
log "building dgt-relay ($profile)"
(cd "$root" && CARGO_TARGET_DIR="$target" cargo build -p dgt-relay --locked "${build_flags[@]}")
bin="$target/$profile/dgt-relay"

# 3. The demo on a free loopback port.
port="$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
data="$(mktemp -d)"
mkdir -p "$artifacts"
games=()
corpus="$root/../shared/corpus/livechess-2.2.5-sample-round.pgn"
[ -f "$corpus" ] && games=(--games "$corpus")
# The console test signs in with this token (16 to 200 printable characters).
token="browser-test-$(node -e "console.log(require('crypto').randomBytes(12).toString('hex'))")"
log "starting: dgt-relay demo --boards $boards --speed $speed --listen 127.0.0.1:$port"
DGT_RELAY_TOKEN="$token" "$bin" demo --boards "$boards" --speed "$speed" --listen "127.0.0.1:$port" --data "$data" "${games[@]}" \
  >"$artifacts/demo.log" 2>&1 &
demo_pid=$!

cleanup() {
  if kill -0 "$demo_pid" 2>/dev/null; then
    kill -TERM "$demo_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$demo_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$demo_pid" 2>/dev/null || true
  fi
  wait "$demo_pid" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT

url="http://127.0.0.1:$port"
for i in $(seq 1 120); do
  if node -e "fetch('$url/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$demo_pid" 2>/dev/null; then
    echo "the demo exited; its log:" >&2
    cat "$artifacts/demo.log" >&2
    exit 1
  fi
  [ "$i" = 120 ] && { echo "the demo did not answer on $url/health within 60 s" >&2; exit 1; }
  sleep 0.5
done
log "demo is up at $url"

# 4. The test. Node 20 has WebSocket behind a flag; later versions have it on.
node_flags=()
node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' || node_flags=(--experimental-websocket)
status=0
(cd "$here"
  export RELAY_URL="$url" RELAY_TOKEN="$token" TRF_FILE="$root/host/tests/data/bbp-issue7.trf" \
    CHROMIUM="$chromium" ARTIFACTS="$artifacts" RELAY_BIN="$bin"
  rc=0
  for file in live-page.test.mjs layout.test.mjs console.test.mjs; do # in this order: the console changes games
    node "${node_flags[@]}" --test --test-reporter=spec "$file" || rc=1
  done
  # A whole event on a relay of its own (with a Lichess stand-in), beside the demo's.
  node "${node_flags[@]}" --test --test-reporter=spec event.test.mjs || rc=1
  exit "$rc") || status=$?
log "screenshots and report.json in $artifacts"
exit "$status"
