//! Parse-throughput benchmark (`cargo bench -p trainscope-core --bench parse`):
//! the SimAI parser on seed 001 and on a generated workload of one million
//! records, plus the other parsers on their seeds, printed as MB/s. A plain
//! binary (`harness = false`): it prints figures and asserts nothing about
//! time. Goal: at least 100 MB/s for SimAI workloads, native release build.

use std::hint::black_box;
mod common;

use common::measure;
use std::time::Duration;
use trainscope_core::formats::{echo, neusight, optimus, simai};

const SEED001: &str = include_str!("../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt");
const NEUSIGHT: &str =
    include_str!("../../../tests/fixtures/seeds/neusight_gpt2large_dp_workitems.tsv");
const ECHO: &str =
    include_str!("../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");
const OPTIMUS: &str =
    include_str!("../../../tests/fixtures/seeds/optimus_prime_llama1b_pp8_train.log");

/// A SimAI workload of `n` records in the style of seed 001 (tabs, unrolled
/// blocks, sizes above 2^32).
fn generated_workload(n: usize) -> String {
    let mut s = String::with_capacity(n * 90);
    s.push_str("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 16 vpp: 1 ga: 16 all_gpus: 1024 checkpoints: 0 checkpoint_initiates: 0\n");
    s.push_str(&format!("{n}\n"));
    let rows = [
        "attention_column\t-1\t5729721\tALLGATHER\t134217728\t2864860\tREDUCESCATTER\t0\t2864860\tNONE\t0\t100\n",
        "attention_row\t-1\t5729721\tREDUCESCATTER\t134217728\t2864860\tALLGATHER\t134217728\t2864860\tNONE\t0\t100\n",
        "mlp_column\t-1\t5278888\tALLGATHER\t134217728\t5278888\tREDUCESCATTER\t0\t5278888\tNONE\t0\t100\n",
        "grad_param_comm\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tREDUCESCATTER\t12802064384\t100\n",
    ];
    for i in 0..n {
        s.push_str(rows[i % rows.len()]);
    }
    s
}

fn report(name: &str, bytes: usize, min: Duration, f: impl FnMut()) {
    let (mbps, runs) = measure(bytes, min, f);
    println!(
        "{name:<42} {:>10.2} MB  {mbps:>9.1} MB/s  (best of {runs})",
        bytes as f64 / 1e6
    );
}

fn main() {
    let min = Duration::from_millis(1500);
    println!("parse throughput (best run; native build of this binary)");
    report("simai seed 001 (parse)", SEED001.len(), min, || {
        black_box(simai::parse("s1", black_box(SEED001)).ok());
    });
    report(
        "simai seed 001 (parse + to_model)",
        SEED001.len(),
        min,
        || {
            let w = simai::parse("s1", black_box(SEED001)).ok();
            black_box(w.map(|w| simai::to_model("s1", &w)));
        },
    );
    let big = generated_workload(1_000_000);
    report("simai generated, 1,000,000 records", big.len(), min, || {
        let w = simai::parse("gen", black_box(&big)).ok();
        assert_eq!(w.as_ref().map(|w| w.records.len()), Some(1_000_000));
        black_box(w);
    });
    report("neusight seed (parse)", NEUSIGHT.len(), min, || {
        black_box(neusight::parse("n", black_box(NEUSIGHT)).ok());
    });
    report("echo seed (parse)", ECHO.len(), min, || {
        black_box(echo::parse("e", black_box(ECHO)).ok());
    });
    report("optimus seed (parse)", OPTIMUS.len(), min, || {
        black_box(optimus::parse("o", black_box(OPTIMUS)).ok());
    });
}
