//! The per-rank breakdown of measured PyTorch profiler traces
//! (`trainscope_core::analysis`): compute / communication / overlap / idle
//! against values computed by hand on the 2-rank fixture, and straggler
//! detection on generated jobs with one slowed rank (the compute straggler
//! and the last arrival at every collective).

use trainscope_core::analysis::analyse;
use trainscope_core::inspect::{load_set, LoadOptions};
use trainscope_tests::kineto_gen::KinetoJob;
use trainscope_tests::FixtureSet;

#[test]
fn breakdown_of_the_two_rank_fixture_by_hand() {
    let rels = [
        "kineto/job2_rank0.json",
        "kineto/job2_rank1.pt.trace.json.gz",
    ];
    let fx = FixtureSet::read(&rels);
    let files = fx.files();
    let set = load_set(&files, None, &LoadOptions::default());
    let a = analyse(&set.runs[0], 3);
    assert_eq!(a.iteration, Some(8));
    // Rank 0, step 8 (t0 = 1001000 us): memcpy 20.25, gemm_fwd 200.125,
    // gemm_bwd 300 [250.5, 550.5], memset 1, optimizer 150 => compute
    // 671.375 us; all-reduce [400, 700] => 300 us, overlapping gemm_bwd over
    // [400, 550.5] => 150.5 us; busy 820.875 of 900.5 => idle 79.625 us.
    let r0 = &a.ranks[0];
    assert_eq!(
        (
            r0.iteration_ns,
            r0.compute_ns,
            r0.communication_ns,
            r0.overlap_ns,
            r0.exposed_communication_ns,
            r0.idle_ns
        ),
        (900_500, 671_375, 300_000, 150_500, 149_500, 79_625)
    );
    // Rank 1 computes 50 us longer (gemm_fwd 250.125) and arrives 50 us
    // later at the all-reduce: it is the straggler, rank 0 waited 50 us,
    // the transfer part is 250 us.
    let r1 = &a.ranks[1];
    assert_eq!(
        (
            r1.compute_ns,
            r1.communication_ns,
            r1.overlap_ns,
            r1.idle_ns
        ),
        (721_375, 250_000, 150_500, 79_625)
    );
    assert_eq!(a.compute_straggler, Some(1));
    assert_eq!(a.straggler_excess_ns, 50_000);
    assert_eq!(a.collectives.len(), 1);
    let c = &a.collectives[0];
    assert_eq!(
        (c.last_rank, c.max_wait_ns, c.transfer_ns),
        (1, 50_000, 250_000)
    );
    assert_eq!(a.last_arrivals, vec![(1, 1)]);
    assert_eq!(a.top_kernels[0].name, "sm90_gemm_bwd");
    assert_eq!(a.top_kernels[0].total_ns, 600_000);
    assert_eq!(a.top_kernels.len(), 3);
}

#[test]
fn slowed_rank_is_named_straggler_on_generated_jobs() {
    for (world, slow, pct) in [(4, 2, 20), (8, 5, 10), (8, 0, 30)] {
        let job = KinetoJob {
            seed: 11,
            world,
            layers: 6,
            slow_rank: Some((slow, pct)),
            ..KinetoJob::default()
        };
        let files = job.generate();
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_bytes()))
            .collect();
        let set = load_set(&refs, None, &LoadOptions::default());
        let a = analyse(&set.runs[0], 5);
        assert_eq!(a.compute_straggler, Some(slow), "world {world}");
        // The slowed rank arrives last at every all-reduce of the backward.
        let all_reduces: Vec<_> = a
            .collectives
            .iter()
            .filter(|c| c.name.contains("AllReduce"))
            .collect();
        assert!(!all_reduces.is_empty());
        assert!(
            all_reduces.iter().all(|c| c.last_rank == slow),
            "{all_reduces:?}"
        );
        // Everyone else's breakdown adds up: busy + idle = iteration.
        for r in &a.ranks {
            assert_eq!(
                r.compute_ns + r.communication_ns - r.overlap_ns + r.idle_ns,
                r.iteration_ns
            );
        }
    }
}
