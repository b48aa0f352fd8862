#!/bin/bash
# Runs ASTRA-sim (analytical backend) on the Chakra execution traces
# trainscope writes for a few model-level jobs, and prints, per job, how many
# ranks ASTRA-sim finished, its slowest rank's time and trainscope's own
# simulated iteration time (different network models: for information).
#
# Not part of the test suite (ASTRA-sim is a separate C++ project). Needs:
#   ASTRA_SIM       an astra-sim checkout with its submodules, built with
#                   build/astra_analytical/build.sh (protobuf-compiler and
#                   libprotobuf-dev from Debian's archive)
#   target/release/trainscope  (cargo build --release -p trainscope-cli)
# Usage: ASTRA_SIM=/path/to/astra-sim scripts/astra-sim-check.sh [OUT_DIR]
# Checked with astra-sim 4f387bc (2025-08-08, the last commit before its
# feeder_v3): every job below finishes on all 8 ranks (README, Chakra).
set -euo pipefail
: "${ASTRA_SIM:?set ASTRA_SIM to an astra-sim checkout built with build/astra_analytical/build.sh}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$ROOT/target/release/trainscope
BIN=$ASTRA_SIM/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware
EX=$ASTRA_SIM/examples
OUT=${1:-$ROOT/target/astra-sim-check}
mkdir -p "$OUT"
[ -x "$T" ] || { echo "build trainscope first: cargo build --release -p trainscope-cli" >&2; exit 2; }
[ -x "$BIN" ] || { echo "no $BIN: build ASTRA-sim's analytical backend first" >&2; exit 2; }
job() {
  local name=$1; shift
  rm -rf "${OUT:?}/$name"
  "$T" convert "$@" --to chakra-et -o "$OUT/$name" > "$OUT/$name.convert.log" 2>&1
  # A job without process groups writes no comm_groups.json; ASTRA-sim
  # takes an empty object for "every collective over all ranks".
  [ -f "$OUT/$name/comm_groups.json" ] || echo '{}' > "$OUT/$name/comm_groups.json"
  (cd "$OUT" && timeout 600 "$BIN" \
    --workload-configuration="$OUT/$name/trainscope" \
    --comm-group-configuration="$OUT/$name/comm_groups.json" \
    --system-configuration="$EX/system/native_collectives/HGX-H100-validated.json" \
    --remote-memory-configuration="$EX/remote_memory/analytical/no_memory_expansion.json" \
    --network-configuration="$EX/network/analytical/HGX-H100-validated.yml" \
    > "$OUT/$name.log" 2>&1) || true
  local finished slowest ours
  finished=$(grep -c 'finished,' "$OUT/$name.log" || true)
  slowest=$(grep -o 'finished, [0-9]* cycles' "$OUT/$name.log" | awk '{print $2}' | sort -n | tail -1)
  ours=$("$T" simulate "$@" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_ns"])')
  echo "$name | $finished/8 ranks finished | ASTRA-sim ${slowest:-none} ns | trainscope $ours ns"
}
job llama3.2-1b-tp2-pp2-dp2 --model llama3.2-1b --tp 2 --pp 2 --world 8 --global-batch-size 8
job llama3.2-1b-tp2-pp4 --model llama3.2-1b --tp 2 --pp 4 --world 8 --global-batch-size 8
job llama3.2-1b-tp2-pp2-vpp2 --model llama3.2-1b --tp 2 --pp 2 --vpp 2 --world 8 --global-batch-size 8
job llama3-8b-tp2-pp2 --model llama3-8b --tp 2 --pp 2 --world 8 --global-batch-size 8
job mixtral-8x7b-tp2-pp2-ep2 --model mixtral-8x7b --tp 2 --pp 2 --ep 2 --world 8 --global-batch-size 8
job llama3-8b-tp4-pp2-sp --model llama3-8b --tp 4 --pp 2 --world 8 --sequence-parallel --global-batch-size 8
job llama3-8b-dp8-distopt --model llama3-8b --world 8 --distributed-optimizer --global-batch-size 8
