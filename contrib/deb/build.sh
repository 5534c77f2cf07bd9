#!/usr/bin/env bash
# Builds the Debian package of the relay from a release build: target/debian/dgt-relay_VERSION_ARCH.deb.
# Usage: contrib/deb/build.sh [RUST_TARGET]  (the host's build by default;
# aarch64-unknown-linux-gnu gives the arm64 package for a Raspberry Pi 4/5 on 64-bit
# Raspberry Pi OS or Debian). Builds the binary with cargo when it is missing or older than
# the sources; needs only dpkg-deb.
#
# The package: /usr/bin/dgt-relay; the systemd unit dgt-relay.service (installed, not
# enabled: edit /etc/dgt-relay/relay.toml first, then `systemctl enable --now dgt-relay`);
# /etc/dgt-relay/relay.toml (a conffile, from relay.example.toml); a system user dgt-relay
# in group dialout (the serial ports' group) owning /var/lib/dgt-relay.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target=${1:-}
if [ -n "$target" ]; then
  bin=target/$target/release/dgt-relay
  cargo build --release --locked -p dgt-relay --target "$target"
else
  bin=target/release/dgt-relay
  cargo build --release --locked -p dgt-relay
fi
case ${target:-$(rustc -vV | sed -n 's/^host: //p')} in
  x86_64-*linux*) arch=amd64 ;;
  aarch64-*linux*) arch=arm64 ;;
  *) echo "no Debian architecture for target ${target:-host}" >&2; exit 1 ;;
esac
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
pkg=target/debian/dgt-relay_${version}_${arch}
rm -rf "$pkg"
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/etc/dgt-relay" "$pkg/usr/share/doc/dgt-relay"
install -m 755 "$bin" "$pkg/usr/bin/dgt-relay"
# Debian's binaries are stripped; the cross build's strip comes with its linker.
strip_tool=strip
[ "$arch" = arm64 ] && [ "$(uname -m)" != aarch64 ] && strip_tool=aarch64-linux-gnu-strip
command -v "$strip_tool" >/dev/null && "$strip_tool" --strip-unneeded "$pkg/usr/bin/dgt-relay"
sed 's|/usr/local/bin/dgt-relay|/usr/bin/dgt-relay|' contrib/dgt-relay.service > "$pkg/lib/systemd/system/dgt-relay.service"
chmod 644 "$pkg/lib/systemd/system/dgt-relay.service"
install -m 644 relay.example.toml "$pkg/etc/dgt-relay/relay.toml"
install -m 644 README.md docs/organiser.md "$pkg/usr/share/doc/dgt-relay/"
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: dgt-relay"
  echo
  echo "Files: *"
  echo "License: GPL-3.0-or-later"
  echo " On Debian systems the full text is in /usr/share/common-licenses/GPL-3."
} > "$pkg/usr/share/doc/dgt-relay/copyright"
echo /etc/dgt-relay/relay.toml > "$pkg/DEBIAN/conffiles"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: dgt-relay
Version: $version
Architecture: $arch
Maintainer: DGT live relay developers <dgt-relay@localhost>
Depends: libc6 (>= 2.31), adduser
Section: games
Priority: optional
Installed-Size: $(du -sk "$pkg" | cut -f1)
Homepage: https://github.com/dgt-relay/dgt-relay
Description: live relay for DGT electronic chessboards
 Turns the serial events of DGT e-boards and their clocks into correct chess
 games with clock times and publishes them while they are played: a websocket
 feed, PGN that Lichess broadcasts can poll, a live page for spectators and an
 operator console in the browser. Includes a demo on simulated boards.
CONTROL
cat > "$pkg/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  install -d -m 750 /var/lib/dgt-relay
  if ! getent passwd dgt-relay >/dev/null; then
    adduser --system --group --home /var/lib/dgt-relay --no-create-home --shell /usr/sbin/nologin dgt-relay
  fi
  adduser dgt-relay dialout >/dev/null
  chown dgt-relay:dgt-relay /var/lib/dgt-relay
  chgrp dgt-relay /etc/dgt-relay/relay.toml && chmod 640 /etc/dgt-relay/relay.toml
  if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
SCRIPT
cat > "$pkg/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
SCRIPT
cat > "$pkg/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then systemctl stop dgt-relay.service || true; fi
SCRIPT
chmod 755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm" "$pkg/DEBIAN/prerm"
dpkg-deb --root-owner-group --build "$pkg" "$pkg.deb" >/dev/null
rm -rf "$pkg"
echo "$pkg.deb"
