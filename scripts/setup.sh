#!/usr/bin/env bash
# Installs every tool trainscope needs, skipping each one already present at
# its pinned version. Idempotent; only uses rustup, crates.io, npm and apt.
# Usage: scripts/setup.sh            (everything)
#        scripts/setup.sh --no-browser  (skip chromium, for build-only use)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh

want_browser=1
[ "${1:-}" = "--no-browser" ] && want_browser=0

step() { # step NAME CMD... : run and report how long it took
  local name=$1; shift
  local t0=$SECONDS
  echo "setup: $name ..."
  "$@"
  echo "setup: $name done in $((SECONDS - t0)) s"
}

have_version() { # have_version CMD EXPECTED: true when `CMD --version` mentions EXPECTED
  command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -qF "$2"
}

# 1. Rust target for the web crate.
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: rust target wasm32-unknown-unknown present"
else
  step "rustup target add wasm32-unknown-unknown" rustup target add wasm32-unknown-unknown
fi
for comp in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$comp"; then
    step "rustup component add $comp" rustup component add "$comp"
  fi
done

# 2. Cargo tools, built from crates.io (no prebuilt downloads). Release LTO is
#    turned off for the install only: it halves the cold build time.
cargo_tool() { # cargo_tool BIN CRATE VERSION [--locked]
  if have_version "$1" "$3"; then
    echo "setup: $1 $3 present"
  else
    step "cargo install $2@$3" env CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback \
      cargo install "$2" --version "=$3" --force ${4:-}
  fi
}
# wasm-bindgen-cli's lockfile names a crate the registry lacks, so it resolves
# fresh; trunk and wasm-pack break with fresh dependencies and use their locks.
cargo_tool wasm-bindgen wasm-bindgen-cli "$WASM_BINDGEN_VERSION"
cargo_tool trunk trunk "$TRUNK_VERSION" --locked
cargo_tool wasm-pack wasm-pack "$WASM_PACK_VERSION" --locked

# 3. Debian's Chromium and its driver for browser tests.
if [ "$want_browser" = 1 ]; then
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    echo "setup: chromium + chromedriver present"
  else
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    step "apt-get install chromium chromium-driver" sh -c \
      "$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null"
  fi
fi

# 4. npm packages: wasm-opt (binaryen) and playwright-core, pinned by package-lock.
if [ -f tests/e2e/node_modules/.package-lock.json ] && \
   cmp -s tests/e2e/package-lock.json tests/e2e/node_modules/.trainscope-lock; then
  echo "setup: npm packages present"
else
  step "npm ci (tests/e2e)" sh -c "cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.trainscope-lock"
fi
echo "setup: all tools ready"
