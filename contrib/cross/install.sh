#!/usr/bin/env bash
# Installs what the cross builds and their runs need: the Rust targets
# x86_64-pc-windows-gnu and aarch64-unknown-linux-gnu, Debian's MinGW-w64 and ARM64 cross
# compilers (linkers named in .cargo/config.toml), Wine (64-bit) and qemu-user.
# Usage: install.sh [windows|arm64]... (both by default). Exit status 0 when every asked
# platform can be built and run here; otherwise what is missing is printed on stderr and
# the status is 1 (the caller prints SKIPPED for that platform).
set -uo pipefail
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(windows arm64)
apt_install() {
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || { echo "apt-get is missing (needed: ${missing[*]})" >&2; return 1; }
  local sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
  { $sudo apt-get install -y --no-install-recommends "${missing[@]}" \
    || { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }; } >&2 \
    || { echo "cannot install ${missing[*]} with apt-get" >&2; return 1; }
}
rc=0
for w in "${want[@]}"; do
  case $w in
    windows)
      rustup target add x86_64-pc-windows-gnu >&2 || { echo "cannot add the Rust target x86_64-pc-windows-gnu" >&2; rc=1; }
      DEBIAN_FRONTEND=noninteractive apt_install gcc-mingw-w64-x86-64 wine64 || rc=1 ;;
    arm64)
      rustup target add aarch64-unknown-linux-gnu >&2 || { echo "cannot add the Rust target aarch64-unknown-linux-gnu" >&2; rc=1; }
      DEBIAN_FRONTEND=noninteractive apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user || rc=1 ;;
    *) echo "unknown platform $w (windows, arm64)" >&2; rc=1 ;;
  esac
done
exit $rc
