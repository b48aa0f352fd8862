#!/usr/bin/env python3
"""Convert a ByteDance StragglerAnalysis trace (one row per op: dp_rank, stage,
rank, step, optype, start_ts [s, step-relative], duration [s], seq_id, mb_id ...)
into Echo/Megatron per-rank text traces that trainscope reads (docs/FORMATS.md 2.3).

One Echo job (one directory, one file per rank) per training step, because the
trainscope Echo replay uses the first iteration of a job.

Input: a .parquet file (needs pyarrow: Parquet with Snappy pages cannot be decoded
with the Python standard library) or a .jsonl/.jsonl.gz file with one JSON object per
row (the same columns), which needs only the standard library.

Mapping (TP ranks are not in the traces: one rank per (dp_rank, stage), TP = 1):
  forward-compute      -> forward_step     (batch_id = mb, per micro-batch)
  backward-compute     -> backward_step
  forward-send/-recv   -> send_forward / recv_forward   (group pp, batch_id = seq_id)
  backward-send/-recv  -> send_backward / recv_backward
  grads-reduce-scatter -> dp_allreduce     (group dp)
  params-all-gather    -> params_allgather (group dp)
  embedding-grads-all-reduce -> ep_allreduce (group ep: first and last stage)
  optimizer-clip-main-grad   -> clip_main_grad, compute lasting its transfer part
                                (end - latest start of the step's clip ops on all ranks), the
                                waiting cut out and the optimizer moved earlier by it: a
                                world-wide barrier has no trainscope group
  params-all-gather on stages > 0 is left out (hidden behind the wait for the first
                                activation; trainscope's replay would put it after that receive)
  layernorm-grads-all-reduce, gc -> compute (the artifact does not synchronise them either)
  optimizer            -> optimizer_step
Collectives and transfers get a constant synthetic size (SIZE_ELEMS float32) so that
trainscope treats them as sized collectives and infers the bandwidth from the trace.
Echo rank = stage * dp + dp_rank (TP fastest, then DP, then PP), as the artifact's `rank`.
"""
import argparse
import gzip
import json
import os
import sys
from collections import defaultdict

SIZE_ELEMS = 1048576  # 4 MiB in float32
OFFSET_MS = 1_000_000.0  # Echo timestamps must be non-zero

MAP = {
    'forward-compute': ('forward_step', None, 'mb'),
    'backward-compute': ('backward_step', None, 'mb'),
    'forward-send': ('send_forward', 'pp', 'seq'),
    'forward-recv': ('recv_forward', 'pp', 'seq'),
    'backward-send': ('send_backward', 'pp', 'seq'),
    'backward-recv': ('recv_backward', 'pp', 'seq'),
    'grads-reduce-scatter': ('dp_allreduce', 'dp', 'zero'),
    'params-all-gather': ('params_allgather', 'dp', 'zero'),
    'embedding-grads-all-reduce': ('ep_allreduce', 'ep', 'zero'),
    'optimizer-clip-main-grad': ('clip_main_grad', None, 'zero'),
    'layernorm-grads-all-reduce': ('layernorm_grads', None, 'zero'),
    'gc': ('gc', None, 'zero'),
    'optimizer': ('optimizer_step', None, 'zero'),
}


def read_rows(path):
    if path.endswith('.parquet'):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            sys.exit('reading Parquet needs pyarrow; export the table to JSON lines instead')
        t = pq.read_table(path).to_pydict()
        n = len(t['step'])
        cols = list(t.keys())
        return [{c: t[c][i] for c in cols} for i in range(n)]
    op = gzip.open if path.endswith('.gz') else open
    with op(path, 'rt') as f:
        return [json.loads(line) for line in f if line.strip()]


def seq_of(r):
    if r.get('seq_id') is not None:
        return int(r['seq_id'])
    return int(str(r['optype_seq_id']).rsplit('_', 1)[1])  # the artifact's dumped dataframes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('-o', '--out', required=True)
    ap.add_argument('--steps', type=int, default=0, help='convert only the first N steps (0: all)')
    a = ap.parse_args()
    rows = read_rows(a.trace)
    dp = max(int(r['dp_rank']) for r in rows) + 1
    pp = max(int(r['stage']) for r in rows) + 1
    world = dp * pp
    for r in rows:
        r['end'] = r['start_ts'] + r['duration'] if r.get('end_ts') is None else r['end_ts']
    # clip barrier: latest start per step
    clip_start = defaultdict(float)
    for r in rows:
        if r['optype'] == 'optimizer-clip-main-grad':
            clip_start[r['step']] = max(clip_start[r['step']], r['start_ts'])
    by_step_rank = defaultdict(list)
    for r in rows:
        by_step_rank[(int(r['step']), int(r['stage']) * dp + int(r['dp_rank']))].append(r)
    steps = sorted({s for s, _ in by_step_rank})
    if a.steps:
        steps = steps[:a.steps]
    unknown = set()
    for s in steps:
        d = os.path.join(a.out, f'step{s}')
        os.makedirs(d, exist_ok=True)
        for rank in range(world):
            ops = sorted(by_step_rank.get((s, rank), []), key=lambda r: (r['start_ts'], seq_of(r)))
            # the clip all-reduce is a barrier over all ranks that no trainscope group models:
            # keep only its transfer part (end - latest start over the step) from the rank's own
            # arrival, and move the ops after it (the optimizer) earlier by the waiting removed
            shift = 0.0
            lines = []
            for r in ops:
                r = dict(r)
                if shift:
                    r['start_ts'] -= shift
                    r['end'] -= shift
                if r['optype'] == 'optimizer-clip-main-grad':
                    wait = max(0.0, min(r['end'], clip_start[r['step']]) - r['start_ts'])
                    r['end'] -= wait
                    shift += wait
                if r['optype'] == 'params-all-gather' and int(r['stage']) > 0:
                    # trainscope's replay attaches ops before the first forward to micro-batch 0's
                    # forward, after its receive; on stages > 0 the all-gather runs while the
                    # stage waits for its first activation (hidden), so it is left out there
                    continue
                m = MAP.get(r['optype'])
                if m is None:
                    unknown.add(r['optype'])
                    continue
                name, group, bid = m
                start, end = r['start_ts'], r['end']
                if bid == 'mb':
                    b = r.get('mb_id')
                    b = seq_of(r) if b is None or b != b or int(b) < 0 else int(b)
                elif bid == 'seq':
                    b = seq_of(r)
                else:
                    b = 0
                dur_ms = (end - start) * 1000.0
                ts_ms = OFFSET_MS + end * 1000.0
                shape = f'[{SIZE_ELEMS}]' if group else 'None'
                dtype = 'torch.float32' if group else 'None'
                lines.append(
                    f"rank:{rank}:{name}(stage_id={int(r['stage'])},batch_id={b},mg_state=steady,"
                    f"duration={dur_ms:.6f},description=None,group_kind={group or 'None'},"
                    f"input__shape={shape},input__dtype={dtype},timestamp={ts_ms:.6f},sub_operations=[])")
            fn = os.path.join(d, f'wd{world}_tp1_pp{pp}_dp{dp}_rank{rank}_step{s}.txt')
            with open(fn, 'w') as f:
                f.write('\n'.join(lines) + '\n')
    if unknown:
        print('skipped unknown optypes:', sorted(unknown), file=sys.stderr)
    print(json.dumps({'dp': dp, 'pp': pp, 'world': world, 'steps': steps}))


if __name__ == '__main__':
    main()
