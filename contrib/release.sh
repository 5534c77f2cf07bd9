#!/usr/bin/env bash
# Builds the release archives: Linux x86_64 and ARM64 (.tar.gz) and Windows x86_64 (.zip),
# each with the relay, README, the organiser's guide, the example configuration, the
# systemd unit and the licence; and SHA256SUMS beside them, in target/release-archives/.
# Usage: contrib/release.sh [TARGET...]  (the three by default). The cross tools come from
# contrib/cross/install.sh. The Debian packages are contrib/deb/build.sh's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-pc-windows-gnu)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
out=target/release-archives
mkdir -p "$out"
for t in "${targets[@]}"; do
  cargo build --release --locked -p dgt-relay --target "$t"
  name=dgt-relay-$version-$t
  stage=$out/$name
  rm -rf "$stage"
  mkdir -p "$stage"
  case $t in
    *windows*)
      cp "target/$t/release/dgt-relay.exe" "$stage/"
      cp relay.example.toml "$stage/relay.toml"
      ;;
    *)
      cp "target/$t/release/dgt-relay" "$stage/"
      cp relay.example.toml contrib/dgt-relay.service "$stage/"
      ;;
  esac
  cp README.md LICENSE docs/organiser.md "$stage/"
  # Symbols off (the standard library's debug information is linked in otherwise), with the
  # target's own strip when it is installed.
  case $t in
    x86_64-pc-windows-gnu) strip_tool=x86_64-w64-mingw32-strip; exe=$stage/dgt-relay.exe ;;
    aarch64-unknown-linux-gnu) strip_tool=aarch64-linux-gnu-strip; exe=$stage/dgt-relay ;;
    *) strip_tool=strip; exe=$stage/dgt-relay ;;
  esac
  if command -v "$strip_tool" > /dev/null; then
    "$strip_tool" "$exe"
  fi
  case $t in
    *windows*)
      rm -f "$out/$name.zip"
      (cd "$out" && python3 -m zipfile -c "$name.zip" "$name") ;;
    *)
      tar -C "$out" --owner=0 --group=0 -czf "$out/$name.tar.gz" "$name" ;;
  esac
  rm -rf "$stage"
done
(cd "$out" && sha256sum -- *.tar.gz *.zip 2>/dev/null > SHA256SUMS)
cat "$out/SHA256SUMS"
