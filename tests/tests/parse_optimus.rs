//! Optimus-Prime log parser: snapshots per fixture and for the seed,
//! attribution of interleaved entries by (layer key, ops) signature, epoch
//! lines and noise handling.

use trainscope_core::formats::optimus;
use trainscope_core::inspect::{inspect, to_json};
use trainscope_tests::fixture_bytes;

fn report(rel: &str) -> String {
    let s = inspect(rel, &fixture_bytes(rel), None);
    let json = serde_json::to_string_pretty(&to_json(std::slice::from_ref(&s))).unwrap();
    let rendered: String = s.diagnostics.iter().map(|d| d.render()).collect();
    format!("{json}\n--- rendered diagnostics ---\n{rendered}")
}

fn text(rel: &str) -> String {
    String::from_utf8_lossy(&fixture_bytes(rel)).into_owned()
}

fn steps_digest(log: &optimus::OptimusLog) -> String {
    log.steps
        .iter()
        .map(|s| {
            let e: Vec<String> = s
                .entries
                .iter()
                .map(|e| format!("{}:{}x{}", e.layer, e.total_ns, e.ops))
                .collect();
            format!(
                "rank {} stage {} step {} line {}: {}\n",
                s.rank,
                s.stage,
                s.step,
                s.line,
                e.join(" ")
            )
        })
        .collect()
}

#[test]
fn fixture_snapshots() {
    for name in [
        "interleaved.log",
        "noise_only.log",
        "malformed.log",
        "orphan_entries.log",
    ] {
        let rel = format!("parse/optimus/{name}");
        let digest = optimus::parse(&rel, &text(&rel))
            .map(|l| steps_digest(&l))
            .unwrap_or_default();
        insta::assert_snapshot!(
            format!("optimus__{name}"),
            format!("{}\n--- steps ---\n{digest}", report(&rel))
        );
    }
}

#[test]
fn seed_snapshot() {
    let rel = "seeds/optimus_prime_llama1b_pp8_train.log";
    let log = optimus::parse(rel, &text(rel)).unwrap();
    // Steps 1-3 in full; the rest is covered by the counts in the JSON.
    let digest: String = steps_digest(&log)
        .lines()
        .filter(|l| l.contains(" step 1 ") || l.contains(" step 2 ") || l.contains(" step 3 "))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(
        "optimus_seed",
        format!("{}\n--- steps ---\n{digest}", report(rel))
    );
}

#[test]
fn interleaved_entries_go_to_their_stage() {
    let log = optimus::parse("i", &text("parse/optimus/interleaved.log")).unwrap();
    assert_eq!(log.unattributed_entries, 0);
    let step4: Vec<_> = log.steps.iter().filter(|s| s.step == 4).collect();
    assert_eq!(step4.len(), 2);
    for s in step4 {
        let keys: Vec<&str> = s.entries.iter().map(|e| e.layer.as_str()).collect();
        match s.stage {
            0 => assert_eq!(keys, ["embed", "0"]),
            1 => assert_eq!(keys, ["1", "lm_head"]),
            other => panic!("unexpected stage {other}"),
        }
    }
    let run = optimus::to_run("i", &log);
    let times: Vec<u64> = run.iterations.iter().map(|i| i.duration_ns).collect();
    assert_eq!(times, [101_500_000, 102_500_000, 103_500_000, 99_000_000]);
    assert_eq!(run.iterations[0].iterations_covered, 2);
    assert_eq!(
        run.steady_iteration_ns(),
        Some((102_500_000 + 103_500_000 + 99_000_000) / 3)
    );
    assert_eq!(run.parallel.micro_batches, 4);
}

#[test]
fn noise_only_is_an_error_and_entries_without_header_are_reported() {
    let e = optimus::parse("n", &text("parse/optimus/noise_only.log")).unwrap_err();
    assert!(e.message.contains("no config, forward-time or epoch line"));
    let log = optimus::parse("o", &text("parse/optimus/orphan_entries.log")).unwrap();
    assert_eq!(log.unattributed_entries, 1);
    assert_eq!(log.config.gas, Some(2));
}

#[test]
fn ten_megabyte_line_is_bounded() {
    let mut t = String::from(
        "[rank:0 stage:0] transformer-block(module) forward time (no send/recv) - step 1\n",
    );
    while t.len() < 10 << 20 {
        t.push_str("layer[3]: total=1.000ms, ops=2, avg/op=0.500ms layer[x]: total=");
    }
    let log = optimus::parse("big", &t).unwrap();
    assert!(log.diagnostics.len() <= 202);
    assert!(log.diagnostics.iter().all(|d| d.render().len() < 2_000));
}

#[test]
fn multibyte_text_before_a_config_key_does_not_panic() {
    // `num_stage:` less than 64 bytes after the start of 40 two-byte chars:
    // the look-back window starts inside a char.
    let t = format!("{}xnum_stage:8 segment:2\n", "é".repeat(40));
    let log = optimus::parse("mb", &t).unwrap();
    assert_eq!(log.config.num_stage, Some(8));
    assert_eq!(log.config.segment, Some(2));
    for k in 0..8 {
        let t = format!("{}{}num_stage:3\n", "x".repeat(k), "€".repeat(30));
        assert_eq!(optimus::parse("mb", &t).unwrap().config.num_stage, Some(3));
    }
}

/// A 10-MB log whose blocks hold many distinct entries (each checked for a
/// duplicate) and many headers: completes only if attribution is not
/// quadratic in the entries per block.
#[test]
fn ten_megabyte_log_with_huge_blocks_is_linearithmic() {
    let mut t = String::from("> World size: 2\n> GAS: 4\n> PP: 2\n");
    let mut k = 0u64;
    let mut blocks = 0u32;
    while t.len() < 10 << 20 {
        let stage = blocks % 2;
        t.push_str(&format!(
            "[rank:{stage} stage:{stage}] transformer-block(module) forward time (no send/recv) - step {}\n",
            blocks / 2 + 1
        ));
        for _ in 0..20_000 {
            t.push_str(&format!(
                "layer[{k}]: total=1.500ms, ops=2, avg/op=0.750ms\n"
            ));
            k += 1;
        }
        // One duplicate per block.
        t.push_str(&format!(
            "layer[{}]: total=1.500ms, ops=2, avg/op=0.750ms\n",
            k - 1
        ));
        blocks += 1;
    }
    let log = optimus::parse("big.log", &t).unwrap();
    let entries: u64 = log.steps.iter().map(|s| s.entries.len() as u64).sum();
    assert_eq!(entries, k);
    assert_eq!(log.unattributed_entries, blocks);
    assert!(log.diagnostics.len() <= 202);
    let run = optimus::to_run("big.log", &log);
    assert_eq!(run.op_count() as u64, k);
    assert!(run.diagnostics.len() <= 203, "{}", run.diagnostics.len());
}

#[test]
fn huge_epoch_times_saturate_instead_of_overflowing() {
    let mut t = String::from("> GAS: 1\n");
    for b in 1..=4 {
        t.push_str(&format!(
            "| epoch   1 |     {b}/  9 batches | lr 0.1 | ms/batch 18446744073709 | loss 1.0 | ppl 2.7\n"
        ));
    }
    let log = optimus::parse("huge", &t).unwrap();
    let run = optimus::to_run("huge", &log);
    assert_eq!(run.iterations.len(), 4);
    // Three single iterations of 18 446 744 073 709 000 000 ns: their mean,
    // exactly, although their sum does not fit in 64 bits.
    assert_eq!(run.steady_iteration_ns(), Some(18_446_744_073_709_000_000));
}

/// A log cut short (found by the mutation fuzzer: a BOM, then the seed cut
/// inside its config lines or before its first forward-time entry) gives
/// nothing to simulate: the file is not usable and an error says why,
/// never a failed file with warnings only.
#[test]
fn a_log_cut_before_its_entries_fails_with_an_error_saying_why() {
    let seed = fixture_bytes("seeds/optimus_prime_llama1b_pp8_train.log");
    let text = String::from_utf8(seed).unwrap();
    let pp_line = text.find("> PP:").unwrap();
    for cut in [pp_line + 4, 3000] {
        let mut bytes = "\u{feff}".as_bytes().to_vec();
        bytes.extend_from_slice(&text.as_bytes()[..cut]);
        let s = inspect("cut.log", &bytes, None);
        assert!(!s.is_usable(), "cut at {cut}");
        let errors: Vec<_> = s.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert!(
            errors
                .iter()
                .any(|d| d.message.contains("nothing to simulate")),
            "cut at {cut}: {:?}",
            s.diagnostics
        );
    }
}
