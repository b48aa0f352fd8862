#!/usr/bin/env bash
# Installs what is missing, builds the web app in release mode and serves it,
# with the bundled examples, at http://127.0.0.1:8080 (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
bash scripts/setup.sh --no-browser
cargo fetch --locked >/dev/null 2>&1 || cargo fetch
exec trunk serve --release --address 127.0.0.1 --port 8080
