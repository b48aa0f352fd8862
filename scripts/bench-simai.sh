#!/usr/bin/env bash
# Whole-process time of `trainscope simulate --mode simai` (release build) on
# seed 001 and on SimAI's 9216-GPU example (and seed 000), median of N runs,
# against SimAI-Analytical's reference times (tests/fixtures/simai/README.md:
# 0.61 s, 13.6 s, ~13 s on this kind of machine).
#
# Usage: scripts/bench-simai.sh [N]   (default N = 21)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-21}"
cargo build --release -p trainscope-cli --quiet
BIN=target/release/trainscope
F=tests/fixtures
FLAGS=(-nv 360 -nic 48.5 -n_p_s 8 -g_p_s 8)
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# median_ms NAME REF_S ARGS... : run N times, print the median wall time.
median_ms() {
  local name="$1" ref="$2"; shift 2
  local times=()
  for _ in $(seq "$N"); do
    local t0 t1
    t0=$(date +%s%N)
    "$BIN" "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  local min
  min=$(printf '%s\n' "${times[@]}" | sort -n | head -1)
  awk -v n="$name" -v m="$med" -v mn="$min" -v r="$ref" -v runs="$N" 'BEGIN {
    printf "  %-40s median %8.2f ms  (min %6.2f ms, %d runs)   SimAI %5.2f s  -> %6.0fx faster\n",
      n, m / 1000, mn / 1000, runs, r, (r * 1e6) / m }'
}

echo "trainscope simulate --mode simai, whole process, release build:"
median_ms "seed 000 (-g 512)" 0.61 \
  simulate --mode simai "$F/seeds/simai_llama65b_tp8_pp4_vpp8.txt" -g 512 "${FLAGS[@]}" --csv "$OUT/r000-EndToEnd.csv"
median_ms "seed 001 (-g 1024)" 13.6 \
  simulate --mode simai "$F/seeds/simai_405b_tp8_pp16_ga16_sp.txt" -g 1024 "${FLAGS[@]}" --csv "$OUT/r001-EndToEnd.csv"
median_ms "SimAI example (-g 9216)" 13.0 \
  simulate --mode simai "$F/simai/workload_analytical.txt" -g 9216 "${FLAGS[@]}" --csv "$OUT/rex-EndToEnd.csv"
median_ms "seed 001, --json" 13.6 \
  simulate --mode simai "$F/seeds/simai_405b_tp8_pp16_ga16_sp.txt" -g 1024 "${FLAGS[@]}" --json
cmp -s "$OUT/rex-EndToEnd.csv" "$F/simai/expected/rex-EndToEnd.csv" \
  && echo "  (rex-EndToEnd.csv written by the last runs equals SimAI's byte for byte)"
