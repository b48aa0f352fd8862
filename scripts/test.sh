#!/usr/bin/env bash
# The one test command: installs what is missing (scripts/setup.sh), then runs
# every level in order and ends with `N passed, N failed`:
#   fmt, clippy (native + wasm32 web), cargo test, wasm-pack browser tests,
#   core for wasm32 (+ its dependency invariant), trunk release build, e2e.
# Exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true CARGO_TERM_COLOR=never

bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0; failed=0; failures=()
logdir=target/test-logs; mkdir -p "$logdir"

# check NAME CMD...: a step that counts as one pass or one failure.
check() {
  local name=$1; shift; local t0=$SECONDS log="$logdir/$name.log"
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1)); echo "ok    $name ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAIL  $name ($((SECONDS - t0)) s), log: $log"; tail -40 "$log"
  fi
}

# suite NAME PARSER CMD...: a test runner whose own counts are added.
suite() {
  local name=$1 parser=$2; shift 2; local t0=$SECONDS log="$logdir/$name.log" p f
  "$@" >"$log" 2>&1; local rc=$?
  read -r p f < <($parser "$log")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi   # failed to build or run
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" = 0 ]; then echo "ok    $name: $p passed ($((SECONDS - t0)) s)"
  else failures+=("$name"); echo "FAIL  $name: $p passed, $f failed ($((SECONDS - t0)) s), log: $log"; tail -60 "$log"; fi
}
cargo_counts() { # sum every `test result:` line (cargo test and wasm-bindgen-test)
  awk '/test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed/) p += $(i-1); if ($(i) ~ /^failed/) f += $(i-1) } }
       END { print p + 0, f + 0 }' "$1"
}
node_counts() { # node --test summary lines: `ℹ pass N`, `ℹ fail N`
  awk 'NF == 3 && $2 == "pass" { p = $3 } NF == 3 && $2 == "fail" { f = $3 } END { print p + 0, f + 0 }' "$1"
}
core_deps_pure() { # the core must not depend on wasm/DOM crates
  local bad; bad=$(cargo tree -p trainscope-core -e normal --prefix none | grep -E '^(wasm-bindgen|web-sys|js-sys|yew|gloo)' || true)
  [ -z "$bad" ] || { echo "trainscope-core depends on: $bad"; return 1; }
}
wasm_browser_tests() { # chromedriver leaves a ~90 MB Chromium profile in $TMPDIR per
  # browser session and never removes it: keep them under target/ and remove them after
  local tmp="$PWD/target/wasm-pack-tmp" rc
  mkdir -p "$tmp"
  TMPDIR="$tmp" wasm-pack test --headless --chrome --mode no-install \
    --chromedriver /usr/bin/chromedriver crates/trainscope-web; rc=$?
  rm -rf "$tmp"; return $rc
}
e2e() { # serve-free: the harness serves dist/ itself on 127.0.0.1
  (cd tests/e2e && node --test --test-concurrency=1 --test-reporter=spec ./*.test.js)
}

cargo fetch --locked >/dev/null 2>&1 || cargo fetch
check fmt                cargo fmt --all --check
check clippy-native      cargo clippy --locked --all-targets -- -D warnings
check clippy-web-wasm32  cargo clippy --locked -p trainscope-web --target wasm32-unknown-unknown --all-targets -- -D warnings
suite cargo-test cargo_counts cargo test --locked
suite wasm-pack-test cargo_counts wasm_browser_tests
check core-wasm32        cargo build --locked -p trainscope-core --target wasm32-unknown-unknown
check core-deps-pure     core_deps_pure
check trunk-build        trunk build --release
suite e2e node_counts e2e

[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
