#!/usr/bin/env bash
# Installs what the relay box's firmware needs to be built and booted: the Rust target
# thumbv7em-none-eabihf (rustup) and qemu-system-arm (the distribution's package), each
# only when missing. Exits non-zero, saying which, when one cannot be installed.
set -uo pipefail
missing=()
if ! rustc --print sysroot >/dev/null 2>&1 || [ ! -d "$(rustc --print sysroot)/lib/rustlib/thumbv7em-none-eabihf/lib" ]; then
  rustup target add thumbv7em-none-eabihf || missing+=("the Rust target thumbv7em-none-eabihf (rustup target add failed)")
fi
if ! command -v qemu-system-arm >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  { $sudo apt-get update && $sudo apt-get install -y qemu-system-arm; } >/dev/null \
    || missing+=("qemu-system-arm (apt-get install qemu-system-arm failed)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  printf 'missing: %s\n' "${missing[@]}"
  exit 1
fi
qemu-system-arm --version | head -1
