//! Bounded mutation fuzzing of every parser through `inspect` (the
//! HuggingFace config.json reader and the Kineto trace reader included): the seeds are
//! mutated by byte flips, byte insertions, multi-byte UTF-8 insertions at
//! random byte offsets, truncations, line duplications, large growth (one
//! line repeated up to a few thousand times) and line deletions (a few
//! hundred cases in all so `cargo test` stays quick).
//! Properties: no panic, a bounded number of diagnostics, every rendered
//! diagnostic short, and a failed parse always explains itself.

use proptest::prelude::*;
use trainscope_core::formats::lex::MAX_DIAGNOSTICS_PER_FILE;
use trainscope_core::inspect::{inspect, inspect_set, to_json};
use trainscope_core::workload::Format;
use trainscope_tests::fixture_bytes;

const SEEDS: [&str; 5] = [
    "seeds/simai_llama65b_tp8_pp4_vpp8.txt",
    "seeds/simai_405b_tp8_pp16_ga16_sp.txt",
    "seeds/neusight_gpt2large_dp_workitems.tsv",
    "seeds/echo_megatron_trace_rank7_tp2_pp4.txt",
    "seeds/optimus_prime_llama1b_pp8_train.log",
];

/// HuggingFace config.json seeds (one per family).
const HF_SEEDS: [&str; 4] = [
    "hf/llama3_8b.json",
    "hf/gpt2.json",
    "hf/mixtral_8x7b.json",
    "hf/deepseek_v3.json",
];

/// PyTorch profiler (Kineto) traces, plain and gzip'd (a mutated gzip
/// stream exercises the damaged-stream path).
const KINETO_SEEDS: [&str; 3] = [
    "kineto/job2_rank0.json",
    "kineto/job2_rank1.pt.trace.json.gz",
    "kineto/no_distributed_info.json",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        byte: u8,
    },
    Truncate {
        at: usize,
    },
    DuplicateLine {
        line: usize,
    },
    DeleteLine {
        line: usize,
    },
    /// Insert a multi-byte char's UTF-8 bytes at any byte offset.
    InsertUtf8 {
        at: usize,
        ch: char,
    },
    /// Repeat one line `times` times in place (large growth, bounded).
    RepeatLine {
        line: usize,
        times: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip { at, byte }),
        (
            any::<usize>(),
            prop::sample::select(vec![
                b'\t', b' ', b'\n', b'\r', b'-', b'.', b',', b'[', b')', b'9', b'e', 0u8, 0xff
            ])
        )
            .prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        any::<usize>().prop_map(|line| Mutation::DeleteLine { line }),
        (
            any::<usize>(),
            prop::sample::select(vec!['é', '€', '𝄞', '\u{feff}', '\u{fffd}', 'ﬃ'])
        )
            .prop_map(|(at, ch)| Mutation::InsertUtf8 { at, ch }),
        (any::<usize>(), 100usize..3_000)
            .prop_map(|(line, times)| Mutation::RepeatLine { line, times }),
    ]
}

fn apply(mut data: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if data.is_empty() {
            break;
        }
        let n = data.len();
        match *m {
            Mutation::Flip { at, byte } => data[at % n] = byte,
            Mutation::Insert { at, byte } => data.insert(at % (n + 1), byte),
            Mutation::Truncate { at } => data.truncate(at % n),
            Mutation::InsertUtf8 { at, ch } => {
                let mut buf = [0u8; 4];
                let at = at % (n + 1);
                data.splice(at..at, ch.encode_utf8(&mut buf).bytes());
            }
            Mutation::DuplicateLine { line }
            | Mutation::DeleteLine { line }
            | Mutation::RepeatLine { line, .. } => {
                let starts: Vec<usize> = std::iter::once(0)
                    .chain(
                        data.iter()
                            .enumerate()
                            .filter(|(_, b)| **b == b'\n')
                            .map(|(i, _)| i + 1),
                    )
                    .filter(|s| *s < n)
                    .collect();
                let start = starts[line % starts.len()];
                let end = data[start..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(n, |p| start + p + 1);
                if let Mutation::RepeatLine { times, .. } = *m {
                    let mut copy = data[start..end].to_vec();
                    if copy.last() != Some(&b'\n') {
                        copy.push(b'\n');
                    }
                    // Growth bounded to about 4 MB per mutation.
                    let times = times.min((4 << 20) / copy.len().max(1));
                    let grown: Vec<u8> = copy.repeat(times);
                    data.splice(end..end, grown);
                } else if matches!(m, Mutation::DuplicateLine { .. }) {
                    let copy = data[start..end].to_vec();
                    data.splice(end..end, copy);
                } else {
                    data.drain(start..end);
                }
            }
        }
    }
    data
}

fn check(name: &str, data: &[u8], forced: Option<Format>) -> Result<(), TestCaseError> {
    let s = inspect(name, data, forced);
    // Bounded output: listed diagnostics are capped (plus summaries and the
    // conversion's own few notes).
    prop_assert!(
        s.diagnostics.len() <= MAX_DIAGNOSTICS_PER_FILE + 40,
        "{}",
        s.diagnostics.len()
    );
    for d in &s.diagnostics {
        let r = d.render();
        prop_assert!(r.len() < 4_000, "{r}");
        prop_assert!(!d.message.is_empty());
    }
    // A file without a format, or with neither a job nor a model, must say why.
    if s.format.is_none() || (s.job.is_none() && s.model.is_none()) || !s.is_usable() {
        prop_assert!(s.has_errors(), "{:?}", s.diagnostics);
    }
    let json = serde_json::to_string(&to_json(std::slice::from_ref(&s))).unwrap();
    prop_assert!(json.len() < 2_000_000);
    Ok(())
}

proptest! {
    #![proptest_config(trainscope_tests::proptest_config(100))]

    #[test]
    fn mutated_seeds_never_panic(seed in 0usize..SEEDS.len(), muts in prop::collection::vec(mutation(), 1..6)) {
        let data = apply(fixture_bytes(SEEDS[seed]), &muts);
        check(SEEDS[seed], &data, None)?;
    }

    #[test]
    fn mutated_seeds_forced_to_every_format(seed in 0usize..SEEDS.len(), f in 0usize..Format::ALL.len(), muts in prop::collection::vec(mutation(), 1..4)) {
        let data = apply(fixture_bytes(SEEDS[seed]), &muts);
        check(SEEDS[seed], &data, Some(Format::ALL[f]))?;
    }

    #[test]
    fn mutated_kineto_traces_never_panic(seed in 0usize..KINETO_SEEDS.len(), muts in prop::collection::vec(mutation(), 1..6)) {
        let data = apply(fixture_bytes(KINETO_SEEDS[seed]), &muts);
        check(KINETO_SEEDS[seed], &data, None)?;
        check(KINETO_SEEDS[seed], &data, Some(Format::KinetoTrace))?;
    }

    #[test]
    fn mutated_hf_configs_never_panic(seed in 0usize..HF_SEEDS.len(), muts in prop::collection::vec(mutation(), 1..6)) {
        let data = apply(fixture_bytes(HF_SEEDS[seed]), &muts);
        check(HF_SEEDS[seed], &data, None)?;
        check(HF_SEEDS[seed], &data, Some(Format::HfConfig))?;
    }

    #[test]
    fn mutated_echo_sets_never_panic(muts in prop::collection::vec(mutation(), 1..4)) {
        let a = fixture_bytes("parse/echo/wd2_tp1_pp2_numl4_bs2_rank0_job.txt");
        let b = apply(fixture_bytes("parse/echo/wd2_tp1_pp2_numl4_bs2_rank1_job.txt"), &muts);
        let s = inspect_set(&[("wd2_tp1_pp2_rank0.txt", &a), ("wd2_tp1_pp2_rank1.txt", &b)], None);
        prop_assert_eq!(s.len(), 2);
    }
}

#[test]
fn every_seed_forced_to_every_format_is_handled() {
    for seed in SEEDS {
        for f in Format::ALL {
            let s = inspect(seed, &fixture_bytes(seed), Some(f));
            assert_eq!(s.format, Some(f));
            if !s.has_errors() {
                assert!(s.job.is_some() || s.model.is_some(), "{seed} as {f:?}");
            }
        }
    }
}
