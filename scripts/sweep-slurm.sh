#!/usr/bin/env bash
# A `trainscope sweep` split over a Slurm job array (or a Kubernetes
# Indexed Job): each array task evaluates one deterministic shard with
# `--shard I/N --json` into $OUT/shard-I.json; `trainscope sweep --merge`
# then joins the shards into exactly the report of an unsharded run.
#
# Slurm:   sbatch --array=0-15 scripts/sweep-slurm.sh --model llama3-70b --world 1024
#          then, once every task is done (or chain it with
#          --dependency=afterok:JOBID):
#          trainscope sweep --merge sweep-out/shard-*.json --json > sweep.json
# Kubernetes Indexed Job: the same script as the container's command, with
#          completionMode: Indexed and completions N; it reads
#          JOB_COMPLETION_INDEX and SHARDS=N, OUT on a shared volume.
# Locally: SHARDS=3 scripts/sweep-slurm.sh --model llama3-8b --world 8
#          (no array index: runs the shards one after another, then merges
#          into $OUT/sweep.json).
#
# Environment: SHARDS (default: the array's task count), OUT (default
# sweep-out), TRAINSCOPE (the binary; default `trainscope` on PATH, else
# target/release/trainscope). Threads per task: Slurm's --cpus-per-task
# (RAYON_NUM_THREADS).
#SBATCH --job-name=trainscope-sweep
#SBATCH --cpus-per-task=16
#SBATCH --output=sweep-%A_%a.log
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 SWEEP-FLAGS...  (e.g. --model llama3-70b --world 1024)" >&2
  exit 2
fi
BIN="${TRAINSCOPE:-$(command -v trainscope || echo target/release/trainscope)}"
OUT="${OUT:-sweep-out}"
INDEX="${SLURM_ARRAY_TASK_ID:-${JOB_COMPLETION_INDEX:-}}"
SHARDS="${SHARDS:-${SLURM_ARRAY_TASK_COUNT:-}}"
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
  export RAYON_NUM_THREADS="$SLURM_CPUS_PER_TASK"
fi
mkdir -p "$OUT"

if [ -n "$INDEX" ]; then
  if [ -z "$SHARDS" ]; then
    echo "error: set SHARDS to the number of shards (the array's task count)" >&2
    exit 2
  fi
  i="$INDEX"
  "$BIN" sweep "$@" --shard "$i/$SHARDS" --json > "$OUT/shard-$i.json.part"
  mv "$OUT/shard-$i.json.part" "$OUT/shard-$i.json"
else
  SHARDS="${SHARDS:-2}"
  files=()
  for ((i = 0; i < SHARDS; i++)); do
    "$BIN" sweep "$@" --shard "$i/$SHARDS" --json > "$OUT/shard-$i.json"
    files+=("$OUT/shard-$i.json")
  done
  "$BIN" sweep --merge "${files[@]}" --json > "$OUT/sweep.json"
  echo "merged $SHARDS shards into $OUT/sweep.json" >&2
fi
