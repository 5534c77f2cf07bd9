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
