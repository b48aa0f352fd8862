#!/usr/bin/env bash
# Whole-process time of `trainscope simulate` in the event mode (release
# build): seed 001 (SimAI 405B, 16 stages x 16 micro-batches, simulated in
# full; target under 200 ms), with --json and with a Chrome trace written,
# and the other seeds (seed 000, NeuSight, the Echo replay, the
# Optimus-Prime log with and without --calibrate), median of N runs.
#
# Usage: scripts/bench-event.sh [N]   (default N = 11)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-11}"
cargo build --release -p trainscope-cli --quiet
BIN=target/release/trainscope
S=tests/fixtures/seeds
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# median_ms NAME ARGS... : run N times, print the median and best wall time.
median_ms() {
  local name="$1"; shift
  local times=()
  for _ in $(seq "$N"); do
    local t0 t1
    t0=$(date +%s%N)
    "$BIN" "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  local med min
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  min=$(printf '%s\n' "${times[@]}" | sort -n | head -1)
  awk -v n="$name" -v m="$med" -v mn="$min" -v runs="$N" 'BEGIN {
    printf "  %-44s median %8.2f ms  (best %7.2f ms, %d runs)\n", n, m / 1000, mn / 1000, runs }'
}

echo "trainscope simulate (event mode), whole process, release build:"
median_ms "seed 001 (16 stages x 16 micro-batches)" simulate "$S/simai_405b_tp8_pp16_ga16_sp.txt"
median_ms "seed 001 --json" simulate "$S/simai_405b_tp8_pp16_ga16_sp.txt" --json
median_ms "seed 001 --chrome-trace" simulate "$S/simai_405b_tp8_pp16_ga16_sp.txt" --chrome-trace "$OUT/s1.json"
median_ms "seed 001 --algorithm simai" simulate "$S/simai_405b_tp8_pp16_ga16_sp.txt" --algorithm simai
median_ms "seed 001 interleaved v=2, m=32" simulate "$S/simai_405b_tp8_pp16_ga16_sp.txt" --virtual-stages 2 --micro-batches 32
median_ms "seed 000" simulate "$S/simai_llama65b_tp8_pp4_vpp8.txt"
median_ms "NeuSight (36 blocks, --world 8)" simulate "$S/neusight_gpt2large_dp_workitems.tsv" --world 8
median_ms "Echo rank 7 replay" simulate "$S/echo_megatron_trace_rank7_tp2_pp4.txt"
median_ms "Optimus-Prime log" simulate "$S/optimus_prime_llama1b_pp8_train.log"
median_ms "Optimus-Prime log --calibrate" simulate "$S/optimus_prime_llama1b_pp8_train.log" --calibrate
median_ms "convert Echo --to chrome-trace" convert "$S/echo_megatron_trace_rank7_tp2_pp4.txt" -o "$OUT/e.json"
ls -l "$OUT/s1.json" | awk '{printf "  (seed 001 Chrome trace: %.1f MB)\n", $5 / 1e6}'
