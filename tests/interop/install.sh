#!/usr/bin/env bash
# Installs the independent PGN readers the interop checks use: python-chess (pip),
# chess.js (npm ci in this folder) and Debian's pgn-extract (apt) when it is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! python3 -c 'import chess.pgn' 2>/dev/null; then
  python3 -m pip install -r "$here/requirements.txt" \
    || python3 -m pip install --break-system-packages -r "$here/requirements.txt"
fi
(cd "$here" && npm ci --no-audit --no-fund)
if ! command -v pgn-extract >/dev/null 2>&1 && [ ! -x /usr/games/pgn-extract ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  $sudo apt-get install -y pgn-extract
fi
python3 -c 'import chess; print("python-chess", chess.__version__)'
(cd "$here" && node -e 'import("chess.js").then(() => console.log("chess.js ok"))')
ls -l /usr/games/pgn-extract 2>/dev/null || command -v pgn-extract
