//! Benchmark of the SimAI-compatible mode inside the process (no startup,
//! no file IO): parse + analyse + EndToEnd CSV for seed 000, seed 001 and
//! SimAI's 9216-GPU example, with the reference flags. Prints the median
//! and minimum of N runs per input. `cargo bench -p trainscope-core --bench analytical`.

use std::hint::black_box;
use std::time::{Duration, Instant};
use trainscope_core::analytical::{analyse, csv::end_to_end_csv, parse_workload, AnalyticalConfig};

const INPUTS: [(&str, &[u8], u32); 3] = [
    (
        "seed 000 (llama65b, 33 records)",
        include_bytes!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt"),
        512,
    ),
    (
        "seed 001 (405b, 557 records)",
        include_bytes!("../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt"),
        1024,
    ),
    (
        "SimAI example (9216 GPUs, 1789 records)",
        include_bytes!("../../../tests/fixtures/simai/workload_analytical.txt"),
        9216,
    ),
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    println!("SimAI-compatible mode, in-process, {runs} runs each (median / min):");
    for (name, bytes, world) in INPUTS {
        let config = AnalyticalConfig {
            world_size: Some(world),
            gpus_per_server: Some(8),
            nics_per_server: Some(8),
            nvlink_busbw_gbps: Some(360.0),
            nic_busbw_gbps: Some(48.5),
            ..AnalyticalConfig::default()
        };
        let mut parse_t = Vec::with_capacity(runs);
        let mut analyse_t = Vec::with_capacity(runs);
        let mut total_t = Vec::with_capacity(runs);
        let mut csv_len = 0;
        for _ in 0..runs {
            let t0 = Instant::now();
            let w = parse_workload("bench.txt", black_box(bytes)).expect("parses");
            let t1 = Instant::now();
            let r = analyse(&w, &config).expect("valid configuration");
            let t2 = Instant::now();
            let csv = end_to_end_csv(&r, "bench-");
            let t3 = Instant::now();
            csv_len = black_box(csv).len();
            parse_t.push(t1 - t0);
            analyse_t.push(t2 - t1);
            total_t.push(t3 - t0);
        }
        let min = *total_t.iter().min().expect("runs > 0");
        println!(
            "  {name:<42} parse {:>9.1?}  analyse {:>9.1?}  parse+analyse+csv {:>9.1?} (min {:>9.1?}), csv {csv_len} bytes",
            median(parse_t),
            median(analyse_t),
            median(total_t),
            min
        );
    }
}
