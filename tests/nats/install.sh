#!/usr/bin/env bash
# Installs nats-server (with JetStream) from the distribution's packages when it is missing;
# the tests start their own server on 127.0.0.1 (tests/src/nats.rs).
set -euo pipefail
if ! command -v nats-server >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  $sudo apt-get install -y nats-server
fi
nats-server --version
