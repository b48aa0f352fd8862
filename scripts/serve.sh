#!/usr/bin/env bash
# Installs what is missing, builds the web app in release mode and serves it,
# with the bundled examples, at http://127.0.0.1:8080 (Ctrl-C stops it), with
# live reload on source changes. The dev server's build goes to
# target/serve-dist/, never dist/: its live-reload script (a WebSocket back
# to this server) must not reach a folder that is deployed. The folder to
# deploy comes from scripts/build-site.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
bash scripts/setup.sh --no-browser
cargo fetch --locked >/dev/null 2>&1 || cargo fetch
exec trunk serve --release --dist target/serve-dist --address 127.0.0.1 --port 8080
