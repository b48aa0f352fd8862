//! Tests of the configuration search: enumeration counts worked by hand,
//! the memory check never pruning a configuration that fits (exhaustive on
//! a small model), the Pareto front property, shards merging into the
//! unsharded report, and the explanation of the winner.

use super::report::{build, merge, pareto, process, rank, Outcome, Row, ShardId};
use super::*;
use crate::hardware::gpu_preset;
use crate::job::tests::llama3_70b;
use proptest::prelude::*;

/// A small Llama-style model: 8 layers, 8 heads, hidden 1024.
fn tiny() -> ModelSpec {
    ModelSpec {
        name: "tiny".into(),
        hidden_size: 1024,
        num_layers: 8,
        num_attention_heads: 8,
        num_kv_heads: 8,
        head_dim: 128,
        ffn_hidden_size: 4096,
        vocab_size: 32000,
        max_position_embeddings: 4096,
        ..llama3_70b()
    }
}

fn tiny_spec() -> SweepSpec {
    let mut s = SweepSpec::new(tiny(), gpu_preset("H100").unwrap(), 8);
    s.global_batch_size = 8;
    s.seq_length = 1024;
    s
}

fn reasons(e: &[ReasonCount]) -> Vec<(&str, u64)> {
    e.iter().map(|r| (r.reason.as_str(), r.count)).collect()
}

#[test]
fn default_lists() {
    let s = tiny_spec();
    assert_eq!(s.tp_values(), vec![1, 2, 4, 8]);
    assert_eq!(s.pp_values(), vec![1, 2, 4, 8]);
    assert_eq!(s.ep_values(), vec![1]);
    assert_eq!(s.vpp_values(1), vec![2, 4, 8]);
    assert_eq!(s.vpp_values(2), vec![2, 4]);
    assert_eq!(s.vpp_values(8), Vec::<u32>::new());
    let mut big = SweepSpec::new(llama3_70b(), gpu_preset("H100").unwrap(), 1024);
    big.gpus_per_node = 4;
    assert_eq!(big.tp_values(), vec![1, 2, 4]);
    // 32 and 64 stages leave no whole middle share of 80 layers.
    assert_eq!(big.pp_values(), vec![1, 2, 4, 5, 8, 10, 16, 20, 40, 80]);
    let mut v3 = SweepSpec::new(
        crate::model::presets::preset("deepseek-v3").unwrap(),
        gpu_preset("H100").unwrap(),
        2048,
    );
    v3.gpus_per_node = 8;
    assert_eq!(v3.pp_values(), vec![1, 2, 4, 8, 16, 61]);
    // Llama 3.1 405B's 126 layers: on PP 8 only the embedding and loss
    // counted in the split give whole chunks (128 / 8v), as NVIDIA runs it.
    let l405 = SweepSpec::new(
        crate::model::presets::preset("llama3-405b").unwrap(),
        gpu_preset("H100").unwrap(),
        1024,
    );
    assert_eq!(l405.vpp_values(8), vec![2, 4, 8]);
    assert!(accounted_split(126, 8, 8));
    assert!(!accounted_split(126, 2, 3), "126 = 2 x 3 x 21: an even cut");
    assert!(!accounted_split(126, 1, 8), "no pipeline");
    assert!(
        !accounted_split(126, 8, 16),
        "128 / 128 leaves a chunk without a layer"
    );
}

#[test]
fn uneven_splits_give_the_middle_stages_a_whole_share() {
    // DeepSeek-V3's published layout: 61 layers on 16 stages, 4 + 14 x 4 + 1.
    assert_eq!(uneven_split(61, 16), Some((4, 1)));
    assert_eq!(uneven_split(126, 16), Some((8, 6)));
    assert_eq!(uneven_split(61, 2), Some((31, 30)));
    assert_eq!(uneven_split(7, 4), Some((2, 1)));
    assert_eq!(uneven_split(80, 16), None, "16 divides 80: an even split");
    assert_eq!(uneven_split(80, 32), None, "30 x 3 layers exceed 80");
    assert_eq!(uneven_split(5, 4), None, "one layer left for two stages");
    assert_eq!(uneven_split(9, 1), None);
    for (layers, pp) in [(61u32, 16u32), (126, 16), (61, 2), (7, 4), (13, 4), (30, 8)] {
        let (f, l) = uneven_split(layers, pp).unwrap();
        let middle = layers.div_ceil(pp);
        assert!(
            f >= 1 && l >= 1 && f <= middle && l <= middle,
            "{layers}/{pp}"
        );
        assert_eq!(f + l + (pp - 2) * middle, layers);
    }
}

#[test]
fn a_pp_that_does_not_divide_the_layers_is_searched_with_an_uneven_split() {
    // 8 layers on 3 stages: 3 + 3 + 2.
    let mut s = tiny_spec();
    s.worlds = vec![6];
    s.tp = Some(vec![1]);
    s.pp = Some(vec![3]);
    s.micro_batch_size = Some(vec![1]);
    s.recompute = Some(vec![Recompute::None]);
    s.global_batch_size = 12;
    let e = enumerate(&s);
    let names: Vec<_> = e.candidates.iter().map(|c| c.schedule.name()).collect();
    // No virtual-stage count fits 8 layers on 3 stages (interleaved is not
    // enumerated); the V-shaped schedules are counted as skipped.
    assert_eq!(
        names,
        ["gpipe", "1f1b", "zb-h1", "zb-h2"],
        "{:?}",
        e.skipped_reasons
    );
    for c in &e.candidates {
        assert_eq!(c.job.setup.first_stage_layers, Some(3));
        assert_eq!(c.job.setup.last_stage_layers, Some(2));
        assert!(c
            .flags("")
            .ends_with("--first-stage-layers 3 --last-stage-layers 2"));
        let row = evaluate(c, &SimConfig::default(), "", None).unwrap();
        assert!(row.iteration_time_ns > 0, "{}", c.schedule.name());
        assert_eq!(
            (row.first_stage_layers, row.last_stage_layers),
            (Some(3), Some(2))
        );
    }
}

/// The counts of the module's hand-worked case (see the comments).
#[test]
fn enumeration_counts_by_hand() {
    let mut s = tiny_spec();
    s.tp = Some(vec![1, 2, 4]);
    s.pp = Some(vec![1, 2, 4]);
    s.schedule = Some(vec![ScheduleKind::OneFOneB, ScheduleKind::Interleaved]);
    s.micro_batch_size = Some(vec![1, 2]);
    s.recompute = Some(vec![Recompute::None]);
    s.sequence_parallel = Some(vec![false]);
    // Combinations: per (TP, PP), (1 + interleaved vpp counts) x 2
    // micro-batch sizes; vpp lists: PP 1 {2,4,8}, PP 2 {2,4}, PP 4 {2}:
    // 3 x (8 + 6 + 4) = 54.
    // Skipped: PP 1 interleaved 3 TP x 3 vpp x 2 = 18; TP 4 PP 4 is 16 >
    // 8 GPUs: 4; DP 8 with micro-batch 2 exceeds the batch of 8: 1;
    // interleaving with 1 micro-batch on PP 2 (TP 1, vpp 2 and 4): 2, with
    // 2 micro-batches on PP 4 (TP 1): 1. 26 skipped, 28 candidates.
    let e = enumerate(&s);
    assert_eq!(e.candidates.len(), 28);
    assert_eq!(e.skipped, 26);
    assert_eq!(
        reasons(&e.skipped_reasons),
        vec![
            ("global batch N is not divisible by micro-batch x DP = N x N = N", 1),
            ("one pipeline stage has no schedule to choose (1f1b stands for all)", 18),
            ("the interleaved schedule needs the micro-batch count (N = N / (N x N)) to be a multiple of PP N", 3),
            ("world N is not a multiple of TP x PP = N x N = N", 4),
        ]
    );
    // Deterministic order, indices are positions.
    for (i, c) in e.candidates.iter().enumerate() {
        assert_eq!(c.index as usize, i);
    }
    let first = &e.candidates[0];
    assert_eq!(
        (first.job.setup.tp, first.job.setup.pp, first.job.dp),
        (1, 1, 8)
    );
    assert_eq!(enumerate(&s), e);
}

#[test]
fn schedule_conditions_and_sequence_parallel_are_counted() {
    let mut s = tiny_spec();
    s.tp = Some(vec![1, 2]);
    s.pp = Some(vec![4]);
    s.schedule = Some(vec![ScheduleKind::ZbH2, ScheduleKind::DualPipeV]);
    s.micro_batch_size = Some(vec![1]);
    s.recompute = Some(vec![Recompute::Full]);
    s.sequence_parallel = Some(vec![true]);
    s.global_batch_size = 4;
    // TP 1 runs without sequence parallelism: PP 4, DP 2, 2
    // micro-batches; TP 2, PP 4, DP 1: 4 micro-batches. ZB-H2 needs 7,
    // DualPipeV 8: all four refused.
    let e = enumerate(&s);
    assert_eq!(e.candidates.len(), 0);
    assert_eq!(
        reasons(&e.skipped_reasons),
        vec![
            ("the dualpipev schedule needs m >= 2p micro-batches (DualPipe's num_chunks >= N x ranks); the run has m = N, 2p = N", 2),
            ("the zb-h2 schedule needs m >= 2p - N micro-batches (the first stage warms up with 2p - N forwards); the run has m = N, 2p - N = N", 2),
        ]
    );
    assert_eq!(e.skipped, 4);
    // Both values at TP 1: the second is skipped, TP 1 runs once, off.
    s.sequence_parallel = Some(vec![true, false]);
    s.schedule = Some(vec![ScheduleKind::OneFOneB]);
    let e = enumerate(&s);
    assert_eq!(e.candidates.len(), 3);
    assert!(!e.candidates[0].job.setup.sequence_parallel);
    assert!(!e.candidates[0].flags("").contains("--sequence-parallel"));
    assert_eq!(reasons(&e.skipped_reasons), vec![(SKIP_SP_AT_TP1, 1)]);
}
#[test]
fn reason_keys_hide_numbers_only() {
    assert_eq!(
        reason_key("world 1000 is not a multiple of TP x PP = 8 x 8 = 64"),
        "world N is not a multiple of TP x PP = N x N = N"
    );
    assert_eq!(
        reason_key("zb-h1 on llama3-70b, 2p - 1"),
        "zb-h1 on llama3-70b, 2p - N"
    );
}

/// Every candidate of every schedule: what the memory check prunes does
/// not fit when simulated; for the closed-form schedules the check and
/// the simulation agree exactly.
#[test]
fn pruning_never_drops_a_fitting_configuration() {
    let mut s = tiny_spec();
    s.seq_length = 2048;
    s.global_batch_size = 16;
    s.micro_batch_size = Some(vec![1, 4]);
    s.sequence_parallel = Some(vec![false, true]);
    s.distributed_optimizer = Some(vec![false, true]);
    let e = enumerate(&s);
    assert!(e.candidates.len() > 100, "{}", e.candidates.len());
    let config = sweep_config(&SimConfig::default());
    // Capacity: the median simulated peak, so about half fit.
    let mut peaks: Vec<u64> = e
        .candidates
        .iter()
        .map(|c| evaluate(c, &config, "", None).unwrap().peak_bytes)
        .collect();
    peaks.sort();
    let capacity = peaks[peaks.len() / 2];
    let (mut pruned, mut pruned_lower, mut fitting) = (0, 0, 0);
    for c in &e.candidates {
        let mut c = c.clone();
        c.job.gpu.memory_bytes = capacity;
        let row = evaluate(&c, &config, "", None).unwrap();
        match precheck(&c) {
            Err(why) => {
                assert!(!row.fits, "pruned but fits: {}", c.flags(""));
                pruned += 1;
                if why == PRUNED_LOWER_BOUND {
                    pruned_lower += 1;
                }
            }
            Ok(()) => {
                if has_closed_form(c.schedule) {
                    assert!(
                        row.fits,
                        "closed form kept one that does not fit: {}",
                        c.flags("")
                    );
                }
                fitting += usize::from(row.fits);
            }
        }
    }
    assert!(
        pruned > 20 && pruned_lower > 0 && fitting > 20,
        "{pruned} {pruned_lower} {fitting}"
    );
}

/// Stage by stage, for every capacity at once: the checked memory is the
/// simulated memory (closed forms) or at most it (lower bound).
#[test]
fn checked_memory_bounds_the_simulated_memory_per_stage() {
    let mut s = tiny_spec();
    s.global_batch_size = 16;
    s.recompute = Some(vec![Recompute::None, Recompute::Full]);
    s.micro_batch_size = Some(vec![1, 2]);
    let config = sweep_config(&SimConfig::default());
    let e = enumerate(&s);
    assert!(e.candidates.len() > 50);
    let mut strict = 0;
    for c in &e.candidates {
        let row = evaluate(c, &config, "", None).unwrap();
        let (m, _) = precheck_memory(c);
        let checked: Vec<u64> = m.per_stage.iter().map(|x| x.peak_bytes).collect();
        if has_closed_form(c.schedule) {
            assert_eq!(checked, row.peak_bytes_per_stage, "{}", c.flags(""));
        } else {
            for (a, b) in checked.iter().zip(&row.peak_bytes_per_stage) {
                assert!(a <= b, "{}: {a} > {b}", c.flags(""));
                strict += usize::from(a < b);
            }
        }
    }
    assert!(strict > 0);
}

/// The reference slicing that [`enumerate_shard`] must equal: the
/// `index`-th of `count` deterministic slices (candidate k goes to
/// slice k mod count, which spreads the costly layouts evenly). `None`
/// when `index >= count` or `count` is 0.
fn shard(candidates: &[Candidate], index: u32, count: u32) -> Option<Vec<Candidate>> {
    if count == 0 || index >= count {
        return None;
    }
    Some(
        candidates
            .iter()
            .filter(|c| c.index % count == index)
            .cloned()
            .collect(),
    )
}

pub(super) fn row(index: u32, t: u64, peak: u64, fits: bool) -> Row {
    Row {
        index,
        flags: format!("--tp {index}"),
        world: 8,
        tp: 1,
        pp: 1,
        dp: 8,
        cp: 1,
        ep: 1,
        expert_tp: None,
        vpp: 1,
        first_stage_layers: None,
        last_stage_layers: None,
        account_for_embedding: false,
        account_for_loss: false,
        micro_batch_size: 1,
        micro_batches: 1,
        recompute: "none".into(),
        schedule: "1f1b".into(),
        sequence_parallel: false,
        distributed_optimizer: true,
        zero: 1,
        hsdp_shard: 0,
        offload: Default::default(),
        software: String::new(),
        iteration_time_ns: t,
        tokens_per_second: 1.0,
        mfu: 0.5,
        peak_bytes: peak,
        peak_bytes_per_stage: vec![peak],
        capacity_bytes: 100,
        fits,
        bubble_ns: 0,
        exposed_comm_ns: Default::default(),
        straggler_iteration_time_ns: None,
        straggler_stage: None,
        days_to_train: None,
        pareto: false,
    }
}

fn dominates(a: &Row, b: &Row) -> bool {
    a.iteration_time_ns <= b.iteration_time_ns
        && a.peak_bytes <= b.peak_bytes
        && (a.iteration_time_ns < b.iteration_time_ns || a.peak_bytes < b.peak_bytes)
}

proptest! {
    #[test]
    fn pareto_front_is_exactly_the_undominated(points in prop::collection::vec((0u64..12, 0u64..12, prop::bool::weighted(0.8)), 0..40)) {
        let mut rows: Vec<Row> = points
            .iter()
            .enumerate()
            .map(|(i, (t, m, f))| row(i as u32, *t, *m, *f))
            .collect();
        pareto(&mut rows);
        for r in &rows {
            let dominated = rows.iter().any(|o| o.fits && dominates(o, r));
            prop_assert_eq!(r.pareto, r.fits && !dominated, "{:?}", (r.iteration_time_ns, r.peak_bytes, r.fits));
        }
        if rows.iter().any(|r| r.fits) {
            prop_assert!(rows.iter().any(|r| r.pareto));
        }
    }
}

fn run_all(spec: &SweepSpec, shard_id: Option<ShardId>) -> SweepReport {
    let e = enumerate(spec);
    let config = sweep_config(&SimConfig::default());
    let cands = match shard_id {
        None => e.candidates.clone(),
        Some(id) => shard(&e.candidates, id.index, id.count).unwrap(),
    };
    let outcomes: Vec<Outcome> = cands
        .iter()
        .map(|c| process(c, &config, "--model tiny", None))
        .collect();
    build(
        spec.describe(),
        shard_id,
        e.skipped,
        e.skipped_reasons,
        outcomes,
    )
}

fn small_sweep() -> SweepSpec {
    let mut s = tiny_spec();
    s.seq_length = 4096;
    s.global_batch_size = 16;
    s.micro_batch_size = Some(vec![1, 2]);
    s.recompute = Some(vec![Recompute::None, Recompute::Full]);
    // Tight memory so that some are pruned and some fail to fit.
    s.gpu.memory_bytes = 3 << 30;
    s
}

#[test]
fn rows_ranked_as_they_arrive_end_as_the_report() {
    let s = small_sweep();
    let whole = run_all(&s, None);
    // The shards' rows arrive interleaved (as from workers); ranking what
    // has arrived gives the report's order and front on each prefix's rows,
    // and on all of them exactly the report's rows.
    let mut arrived: Vec<Row> = Vec::new();
    let shards: Vec<SweepReport> = (0..3)
        .map(|i| run_all(&s, Some(ShardId { index: i, count: 3 })))
        .collect();
    let longest = shards.iter().map(|r| r.results.len()).max().unwrap();
    for k in 0..longest {
        for r in &shards {
            if let Some(row) = r.results.get(k) {
                arrived.push(row.clone());
            }
        }
        rank(&mut arrived);
        let mut want = arrived.clone();
        want.sort_by_key(|r| (!r.fits, r.iteration_time_ns, r.peak_bytes, r.index));
        pareto(&mut want);
        assert_eq!(arrived, want);
    }
    assert_eq!(arrived, whole.results);
}

#[test]
fn shards_merge_into_the_unsharded_report() {
    let s = small_sweep();
    let whole = run_all(&s, None);
    assert!(whole.pruned > 0 && whole.fitting > 1, "{whole:?}");
    assert!(whole.results.iter().any(|r| r.pareto));
    assert_eq!(
        whole.candidates,
        whole.pruned + whole.simulated + whole.failed
    );
    let shards: Vec<SweepReport> = [2, 0, 1]
        .into_iter()
        .map(|i| run_all(&s, Some(ShardId { index: i, count: 3 })))
        .collect();
    assert_eq!(merge(&shards).unwrap(), whole);
    // JSON round trip (what `sweep --merge` reads) changes nothing.
    let back: Vec<SweepReport> = shards
        .iter()
        .map(|r| serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap())
        .collect();
    assert_eq!(merge(&back).unwrap(), whole);
    assert_eq!(
        merge(&shards[..2]).unwrap_err(),
        MergeError::Missing {
            missing: vec![1],
            count: 3
        }
    );
    let twice = vec![shards[0].clone(), shards[0].clone(), shards[1].clone()];
    assert!(matches!(
        merge(&twice),
        Err(MergeError::Duplicate { shard: 2, .. })
    ));
    assert_eq!(
        merge(std::slice::from_ref(&whole)).unwrap_err(),
        MergeError::NotAShard { index: 0 }
    );
    let mut other = small_sweep();
    other.global_batch_size = 32;
    let foreign = run_all(&other, Some(ShardId { index: 1, count: 3 }));
    let mixed = vec![shards[0].clone(), foreign, shards[2].clone()];
    assert!(matches!(
        merge(&mixed),
        Err(MergeError::OtherSweep { index: 1, .. })
    ));
    assert!(shard(&[], 3, 3).is_none());
}

#[test]
fn a_slice_enumerated_alone_is_that_slice_of_the_whole() {
    let spec = small_sweep();
    let whole = enumerate(&spec);
    assert!(whole.candidates.len() > 6, "a sweep worth slicing");
    for count in [1, 2, 3, 7] {
        let mut seen = 0;
        for index in 0..count {
            let alone = enumerate_shard(&spec, Some(ShardId { index, count }));
            let cut = shard(&whole.candidates, index, count).unwrap();
            assert!(alone.candidates == cut, "slice {index} of {count}");
            assert_eq!(alone.skipped, whole.skipped);
            assert_eq!(alone.skipped_reasons, whole.skipped_reasons);
            seen += alone.candidates.len();
        }
        assert_eq!(seen, whole.candidates.len());
    }
    let none = enumerate_shard(&spec, Some(ShardId { index: 3, count: 3 }));
    assert!(none.candidates.is_empty());
}

#[test]
fn explain_names_the_changes_and_what_moved() {
    let mut best = row(0, 800_000_000, 60 << 30, true);
    best.pp = 4;
    best.dp = 32;
    best.bubble_ns = 50_000_000;
    best.capacity_bytes = 80 << 30;
    let mut second = row(1, 900_000_000, 50 << 30, true);
    second.pp = 8;
    second.dp = 16;
    second.bubble_ns = 100_000_000;
    second.exposed_comm_ns.tp = 30_000_000;
    best.exposed_comm_ns.tp = 20_000_000;
    assert_eq!(
        explain(&best, &second),
        "PP 8 -> 4, DP 16 -> 32: iteration 900.0 ms -> 800.0 ms (-11.1%); bubble 100.0 ms -> 50.0 ms (halves); exposed TP comm 30.0 ms -> 20.0 ms (-33.3%); peak memory 50.0 GiB -> 60.0 GiB of 80.0 GiB"
    );
}

/// With `--straggler` the line leads with what the rows rank by: the
/// step with one GPU slowed, and the stage where it costs most.
#[test]
fn explain_leads_with_the_straggler_step_when_ranked_by_it() {
    let mut best = row(0, 900_000_000, 60 << 30, true);
    best.tp = 2;
    best.capacity_bytes = 80 << 30;
    best.straggler_iteration_time_ns = Some(1_000_000_000);
    best.straggler_stage = Some(0);
    let mut second = row(1, 800_000_000, 50 << 30, true);
    second.tp = 4;
    second.straggler_iteration_time_ns = Some(1_100_000_000);
    second.straggler_stage = Some(1);
    assert_eq!(
        explain(&best, &second),
        "TP 4 -> 2: with one GPU slowed 1100.0 ms -> 1000.0 ms (-9.1%; worst at stage 1 -> 0); iteration 800.0 ms -> 900.0 ms (+12.5%); peak memory 50.0 GiB -> 60.0 GiB of 80.0 GiB"
    );
    second.straggler_stage = Some(0);
    assert!(
        explain(&best, &second).contains("(-9.1%; worst at stage 0); iteration"),
        "{}",
        explain(&best, &second)
    );
}

/// A TP change is not an expert TP change (expert TP follows TP unless
/// set); an expert TP set to 1 is named.
#[test]
fn explain_names_expert_tp_only_when_set() {
    let mut best = row(0, 800_000_000, 60 << 30, true);
    best.tp = 2;
    let mut second = row(1, 900_000_000, 50 << 30, true);
    second.tp = 4;
    let why = explain(&best, &second);
    assert!(why.starts_with("TP 4 -> 2:"), "{why}");
    best.expert_tp = Some(1);
    let why = explain(&best, &second);
    assert!(why.starts_with("TP 4 -> 2, expert TP 4 -> 1:"), "{why}");
}

#[test]
fn flags_quote_words_a_shell_would_split() {
    use super::{shell_join, shell_word};
    assert_eq!(shell_word("llama3-8b"), "llama3-8b");
    assert_eq!(
        shell_word("runs/a_b-1.2/config.json"),
        "runs/a_b-1.2/config.json"
    );
    assert_eq!(shell_word("my runs/config.json"), "'my runs/config.json'");
    assert_eq!(shell_word("it's"), "'it'\\''s'");
    assert_eq!(shell_word(""), "''");
    assert_eq!(
        shell_join(&["--model", "a b/config.json", "--gpu-type", "H100-SXM"]),
        "--model 'a b/config.json' --gpu-type H100-SXM"
    );
}

#[test]
fn cp_dimension_enumerates_cp_candidates_and_their_flags() {
    let mut s = tiny_spec();
    s.tp = Some(vec![1]);
    s.pp = Some(vec![1]);
    s.cp = Some(vec![1, 2, 3]);
    s.micro_batch_size = Some(vec![1]);
    s.recompute = Some(vec![Recompute::None]);
    let e = enumerate(&s);
    let cps: Vec<u32> = e.candidates.iter().map(|c| c.job.setup.cp).collect();
    assert!(cps.contains(&1) && cps.contains(&2), "{cps:?}");
    let c2 = e.candidates.iter().find(|c| c.job.setup.cp == 2).unwrap();
    assert_eq!((c2.job.world, c2.job.dp), (8, 4));
    assert!(c2.flags("").contains(" --cp 2 "), "{}", c2.flags(""));
    let c1 = e.candidates.iter().find(|c| c.job.setup.cp == 1).unwrap();
    assert!(!c1.flags("").contains("--cp"));
    // CP 3 does not divide the world 8 (nor 1024 tokens by 6): skipped with
    // the reason.
    assert!(!cps.contains(&3));
    assert!(e.skipped > 0);
    assert!(s.describe().ends_with(" | cp 1,2,3"), "{}", s.describe());
    assert!(!tiny_spec().describe().contains("| cp"));
}

/// What a sweep runs ([`sweep_config`]: summary-only, no timeline) gives
/// every number the full run gives, bit for bit: each row field (iteration
/// time, bubble, exposed communication per group, MFU, tokens/s, memory
/// per stage) and the whole summary (compute, per-stage shares and
/// activation peaks, the critical path's summary) of candidates covering
/// every schedule, interleaving, PP 1 to 8, CP 2, an uneven split and a
/// mixture-of-experts model with EP; only the timeline is left out.
#[test]
fn summary_only_rows_equal_the_full_runs() {
    let full = SimConfig::default();
    let lean = sweep_config(&full);
    assert!(lean.summary_only && !full.summary_only);
    let mut dense = tiny_spec();
    dense.global_batch_size = 16;
    dense.micro_batch_size = Some(vec![1, 2]);
    dense.recompute = Some(vec![Recompute::None]);
    dense.cp = Some(vec![1, 2]);
    let mut uneven = tiny_spec();
    uneven.model.num_layers = 7;
    uneven.worlds = vec![4];
    uneven.pp = Some(vec![4]);
    uneven.global_batch_size = 8;
    uneven.recompute = Some(vec![Recompute::None]);
    let mut moe = SweepSpec::new(
        ModelSpec {
            num_layers: 4,
            ..crate::model::presets::preset("mixtral-8x7b").unwrap()
        },
        gpu_preset("H100").unwrap(),
        16,
    );
    moe.global_batch_size = 8;
    moe.seq_length = 1024;
    moe.tp = Some(vec![2]);
    moe.ep = Some(vec![2, 4]);
    moe.recompute = Some(vec![Recompute::None]);
    let mut candidates = Vec::new();
    for spec in [&dense, &uneven, &moe] {
        candidates.extend(enumerate(spec).candidates);
    }
    let mut schedules = std::collections::BTreeSet::new();
    let (mut cp, mut ep, mut vpp, mut split) = (false, false, false, false);
    for c in &candidates {
        let a = evaluate(c, &full, "", None).unwrap();
        let b = evaluate(c, &lean, "", None).unwrap();
        assert_eq!(a, b, "{}", c.flags(""));
        // Exact, not a tolerance: the floats too, bit for bit.
        assert_eq!(a.mfu.to_bits(), b.mfu.to_bits());
        assert_eq!(a.tokens_per_second.to_bits(), b.tokens_per_second.to_bits());
        let cfg = |base: &SimConfig| SimConfig {
            schedule: c.schedule,
            ..base.clone()
        };
        let x = run_model(&c.job, &cfg(&full)).unwrap();
        let y = run_model(&c.job, &cfg(&lean)).unwrap();
        assert_eq!(
            x.run.result.summary,
            y.run.result.summary,
            "{}",
            c.flags("")
        );
        assert_eq!(x.run.result.activations, y.run.result.activations);
        assert_eq!(x.memory, y.memory);
        assert!(x.run.result.timeline.span_count() > 0);
        assert_eq!(y.run.result.timeline, crate::timeline::Timeline::default());
        schedules.insert(c.schedule.name());
        cp |= a.cp > 1;
        ep |= a.ep > 1;
        vpp |= a.vpp > 1;
        split |= a.first_stage_layers.is_some();
    }
    assert_eq!(schedules.len(), ScheduleKind::ALL.len(), "{schedules:?}");
    assert!(cp && ep && vpp && split, "{cp} {ep} {vpp} {split}");
    assert!(candidates.len() > 100, "{}", candidates.len());
}

/// The distributed optimizer as a dimension: where it has nothing to shard
/// over (DP x CP 1, no expert DP) on and off are the same job, tried once
/// (the list's first value); elsewhere both are tried, and they differ.
#[test]
fn the_distributed_optimizer_is_tried_once_where_it_shards_nothing() {
    let mut s = tiny_spec();
    s.tp = Some(vec![1, 2, 4, 8]);
    s.pp = Some(vec![1]);
    s.schedule = Some(vec![ScheduleKind::OneFOneB]);
    s.micro_batch_size = Some(vec![1]);
    s.recompute = Some(vec![Recompute::None]);
    s.sequence_parallel = Some(vec![false]);
    s.distributed_optimizer = Some(vec![false, true]);
    // TP 1, 2, 4 (DP 8, 4, 2): on and off; TP 8 (DP 1): once, off.
    let e = enumerate(&s);
    let got: Vec<(u32, u32, bool)> = e
        .candidates
        .iter()
        .map(|c| (c.job.setup.tp, c.job.dp, c.job.setup.distributed_optimizer))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 8, false),
            (1, 8, true),
            (2, 4, false),
            (2, 4, true),
            (4, 2, false),
            (4, 2, true),
            (8, 1, false),
        ]
    );
    assert_eq!(
        reasons(&e.skipped_reasons),
        vec![(SKIP_DIST_OPT_UNSHARDED, 1)]
    );
    // The list's first value is the one kept.
    s.distributed_optimizer = Some(vec![true, false]);
    let e = enumerate(&s);
    let dp1: Vec<bool> = e
        .candidates
        .iter()
        .filter(|c| c.job.dp == 1)
        .map(|c| c.job.setup.distributed_optimizer)
        .collect();
    assert_eq!(dp1, vec![true]);
    // The skipped one is the same job: equal time and memory; where DP > 1
    // the two differ (the optimizer states are sharded).
    let config = sweep_config(&SimConfig::default());
    let both = |c: &Candidate| {
        let mut on = c.clone();
        on.job.setup.distributed_optimizer = true;
        let mut off = c.clone();
        off.job.setup.distributed_optimizer = false;
        let (a, b) = (
            evaluate(&on, &config, "", None).unwrap(),
            evaluate(&off, &config, "", None).unwrap(),
        );
        (a.iteration_time_ns, a.peak_bytes) == (b.iteration_time_ns, b.peak_bytes)
    };
    for c in &e.candidates {
        assert_eq!(both(c), c.job.dp == 1, "{}", c.flags(""));
    }
    // The Pareto front of the whole sweep holds no job twice.
    s.distributed_optimizer = Some(vec![false, true]);
    let report = run_all(&s, None);
    let front: Vec<&Row> = report.results.iter().filter(|r| r.pareto).collect();
    assert!(!front.is_empty());
    for (i, a) in front.iter().enumerate() {
        for b in &front[i + 1..] {
            let same = (a.tp, a.pp, a.dp, a.cp, a.ep, a.micro_batch_size)
                == (b.tp, b.pp, b.dp, b.cp, b.ep, b.micro_batch_size);
            assert!(!same, "{} and {} are one layout", a.flags, b.flags);
        }
    }
}

/// A model with experts keeps both values at DP 1 where the experts have
/// data-parallel ranks to shard their optimizer states over.
#[test]
fn the_distributed_optimizer_shards_expert_states_at_dp_1() {
    let model = crate::model::presets::preset("mixtral-8x7b").unwrap();
    let setup = TrainingSetup {
        tp: 8,
        pp: 1,
        dp: Some(1),
        expert_tp: Some(1),
        sequence_parallel: true,
        global_batch_size: Some(8),
        ..TrainingSetup::default()
    };
    let job = ModelJob::new(model, setup, gpu_preset("H100").unwrap(), Some(8)).unwrap();
    assert_eq!((job.dp, job.expert_dp()), (1, 8));
    assert!(job.optimizer_shards());
    let mut dense = job.clone();
    dense.model = tiny();
    assert!(!dense.optimizer_shards());
}

#[test]
fn software_lists_multiply_moe_candidates_and_collapse_on_dense_models() {
    use crate::model::dispatcher::Dispatcher;
    use crate::model::stack::CudaGraphs;
    let mut dense = tiny_spec();
    dense.cuda_graphs = Some(vec![CudaGraphs::None, CudaGraphs::Layers]);
    dense.dispatcher = Some(vec![Dispatcher::AllToAll, Dispatcher::Flex]);
    dense.moe_a2a_overlap = Some(vec![false, true]);
    // A dense model tries the graph scopes only.
    assert_eq!(dense.stack_values().len(), 2);
    let base = enumerate(&tiny_spec()).candidates.len();
    assert_eq!(enumerate(&dense).candidates.len(), 2 * base);
    let mut moe = SweepSpec::new(
        crate::model::presets::preset("qwen3-30b-a3b").unwrap(),
        gpu_preset("H100").unwrap(),
        8,
    );
    moe.dispatcher = Some(vec![Dispatcher::AllToAll, Dispatcher::Flex]);
    moe.moe_a2a_overlap = Some(vec![false, true]);
    let stacks = moe.stack_values();
    assert_eq!(stacks.len(), 4);
    assert!(stacks
        .iter()
        .any(|s| s.dispatcher == Dispatcher::Flex && s.moe_a2a_overlap));
    assert_ne!(
        moe.describe(),
        SweepSpec::new(moe.model.clone(), moe.gpu.clone(), 8).describe()
    );
}
