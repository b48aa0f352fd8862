//! Benchmark of the timeline's level-of-detail buckets (prints figures; no
//! assertions on time): the interaction benchmark's run
//! (`tests/e2e/bench-interaction.mjs`: a SimAI workload of 16 stages x 128
//! micro-batches with 120 layers per block, about one million spans)
//! simulated once, then every lane bucketed into 1 092 pixel columns (the
//! page's plot at 1 280 px) at the fitted view, zoomed in 4x and 64x: what
//! one redraw of the timeline computes per lane, natively.
//! Run with `cargo bench -p trainscope-core --bench timeline [MICRO_BATCHES]`.

mod common;

use common::{ms, time};
use trainscope_core::engine::{spec::JobSpec, SimConfig};
use trainscope_core::formats::simai;
use trainscope_core::timeline::Bucket;

/// The interaction benchmark's workload (same rows as the JS script's).
fn workload(micro_batches: u32) -> String {
    let mut s = format!(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 16 vpp: 1 ga: {micro_batches} all_gpus: 1024 pp_comm: 1048576\n{}\n",
        micro_batches * 121
    );
    for _ in 0..micro_batches {
        s.push_str("embedding_layer\t-1\t2000\tNONE\t0\t1000\tNONE\t0\t1000\tNONE\t0\t100\n");
        for _ in 0..60 {
            s.push_str("attention_column\t-1\t40000\tALLREDUCE\t16777216\t40000\tNONE\t0\t40000\tNONE\t0\t100\n");
            s.push_str(
                "mlp_column\t-1\t60000\tALLREDUCE\t16777216\t60000\tNONE\t0\t60000\tNONE\t0\t100\n",
            );
        }
    }
    s
}

fn main() {
    let mb = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<u32>().ok())
        .unwrap_or(128);
    let text = workload(mb);
    let w = simai::parse("interaction", &text).expect("workload parses");
    let job = JobSpec::from_simai(&w).expect("adapts");
    let r = trainscope_core::engine::simulate(&job, &SimConfig::default()).expect("simulates");
    let tl = &r.timeline;
    let lanes = tl.lanes().len() as u32;
    println!(
        "16 stages x {mb} micro-batches x 120 layers: {} spans on {lanes} lanes",
        tl.span_count()
    );
    let n = 1092usize;
    let end = tl.end_ns() + tl.end_ns() / 50;
    for zoom in [1u64, 4, 64] {
        let (a, b) = (end / 2 - end / zoom / 2, end / 2 + end / zoom / 2);
        let w = u128::from(b - a);
        let edge = |i: usize| a + (w * i as u128 / n as u128) as u64;
        let mut out: Vec<Bucket> = Vec::new();
        let (med, min, busy) = time(21, || {
            let mut busy = 0u64;
            for l in 0..lanes {
                out = tl.buckets_with(l, n, edge);
                busy += out.iter().map(|b| b.busy_ns).sum::<u64>();
            }
            busy
        });
        println!(
            "  zoom {zoom:>2}x: every lane's buckets ({n} columns): median {:.2} ms, best {:.2} ms (busy {busy} ns)",
            ms(med),
            ms(min)
        );
    }
}
