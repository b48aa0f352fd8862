#!/usr/bin/env bash
# The timeline canvas benchmark (issue 7): builds the benchmark page
# (www/bench/timeline.html, release) into target/bench-dist, then drives it
# in headless Chromium (tests/e2e/bench-timeline.mjs): a generated run of
# one million spans zoomed and panned with real input events; prints the
# median and worst frame and draw times and the memory per span, and saves
# screenshots under target/bench/. Extra arguments go to the script
# (--spans N, --no-shots, --no-hidpi).
#
# Usage: scripts/bench-timeline.sh [--spans 1000000] [--no-hidpi]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
bash scripts/setup.sh >/dev/null
trunk build www/bench/timeline.html --release --dist target/bench-dist >/dev/null
node tests/e2e/bench-timeline.mjs "$@"
