#!/usr/bin/env bash
# Builds the deployable site: the release build of the web app into dist/
# (or the folder given as the first argument), ready to copy to any static
# host (GitHub Pages, nginx, Apache, an S3 bucket, `python3 -m http.server`)
# at its root or under any sub-path. Asset URLs are relative (Trunk.toml
# `public_url = "./"`) and the folder holds no dev-server script: it fails if
# a live-reload hook (trunk serve's WebSocket) ended up in it.
#   scripts/build-site.sh            # -> dist/
#   scripts/build-site.sh site/      # -> site/
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
out=${1:-dist}
if [ "${SKIP_SETUP:-}" != 1 ]; then bash scripts/setup.sh --no-browser; fi
cargo fetch --locked >/dev/null 2>&1 || cargo fetch
trunk build --release --dist "$out" --public-url ./
# GitHub Pages: serve files as they are (no Jekyll pass).
touch "$out/.nojekyll"
if grep -q -e '__trunk_address__' -e '__TRUNK_ADDRESS__' -e 'trunk/autoreload' "$out/index.html"; then
  echo "error: $out/index.html holds trunk serve's live-reload script; rebuild with this script" >&2
  exit 1
fi
size=$(du -sh "$out" | cut -f1)
echo "site built in $out/ ($size): copy the folder as it is to any static host, at its root or a sub-path"
