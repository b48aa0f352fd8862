//! Chakra execution traces as Chakra's own converters write them
//! (`tests/fixtures/chakra/converter/`, made by mlcommons/chakra's
//! `chakra_converter`; its README gives the commands and the commit):
//! their `GlobalMetadata` leaves `version` empty and states the schema in
//! a `schema` attribute. Each set is detected as `chakra-et` from its
//! bytes, read with the node counts per type that Chakra's own decoder
//! reports (README), says what trainscope does not model (compute without
//! a duration, CPU operators, metadata nodes) as located warnings, and
//! simulates.

use trainscope_core::formats::chakra::{self, NodeWork};
use trainscope_core::inspect;
use trainscope_core::workload::CommKind;
use trainscope_core::workload::Format;
use trainscope_tests::{chakra_simulate, fixture_bytes};

/// The files of one fixture set (name, bytes): `NAME.<rank>.et`.
fn set(name: &str, ranks: u32) -> Vec<(String, Vec<u8>)> {
    (0..ranks)
        .map(|r| {
            let file = format!("{name}.{r}.et");
            let bytes = fixture_bytes(&format!("chakra/converter/{file}"));
            (file, bytes)
        })
        .collect()
}

/// Per-type counts of a parsed trace: (compute, collectives by kind in
/// the order all-reduce, all-gather, reduce-scatter, all-to-all, others).
fn counts(t: &chakra::ChakraTrace) -> (usize, [usize; 4], usize) {
    let mut compute = 0;
    let mut coll = [0; 4];
    let mut other = 0;
    for n in &t.nodes {
        match n.work {
            NodeWork::Compute => compute += 1,
            NodeWork::Collective(CommKind::AllReduce) => coll[0] += 1,
            NodeWork::Collective(CommKind::AllGather) => coll[1] += 1,
            NodeWork::Collective(CommKind::ReduceScatter) => coll[2] += 1,
            NodeWork::Collective(CommKind::AllToAll) => coll[3] += 1,
            _ => other += 1,
        }
    }
    (compute, coll, other)
}

fn messages(t: &chakra::ChakraTrace) -> String {
    t.diagnostics
        .iter()
        .map(|d| d.short())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_converter_file_is_detected_from_its_bytes() {
    for (name, ranks, schema) in [
        ("text_dp", 4, "1.0.2-chakra.1.0.0"),
        ("text_hybrid", 1, "1.0.2-chakra.1.0.0"),
        ("text_micro", 2, "1.0.2-chakra.1.0.0"),
        ("pytorch", 1, "1.0.2-chakra.0.0.4"),
    ] {
        let files = set(name, ranks);
        for (file, bytes) in &files {
            let (confidence, reason) =
                chakra::looks_like(bytes).unwrap_or_else(|| panic!("{file} is not detected"));
            assert_eq!(confidence, 100, "{file}: {reason}");
            assert!(reason.contains(&format!("schema {schema}")), "{reason}");
            let t = chakra::parse(file, bytes);
            assert_eq!(t.version, schema, "{file}");
        }
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        let loaded = inspect::load_set(&refs, None, &inspect::LoadOptions::default());
        assert_eq!(loaded.summaries.len(), files.len());
        for (i, s) in loaded.summaries.iter().enumerate() {
            assert_eq!(
                s.format,
                Some(Format::ChakraEt),
                "{name}: {:?}",
                s.diagnostics
            );
            assert!(s.usable, "{name}.{i}: {:?}", s.diagnostics);
            assert_eq!(s.file_ranks, Some(vec![i as u32]));
        }
        assert_eq!(loaded.runs.len(), 1, "{name}");
        assert_eq!(loaded.runs[0].parallel.world, ranks, "{name}");
    }
}

#[test]
fn text_converter_node_counts_per_type() {
    // DATA, 4 layers, 1 pass: forward 4, weight gradient 4, input gradient
    // 3 (not the first layer) compute nodes; one all-reduce per layer.
    for (file, bytes) in set("text_dp", 4) {
        let t = chakra::parse(&file, &bytes);
        assert_eq!(t.nodes_read, 15, "{file}");
        assert_eq!(t.nodes_skipped, 0, "{file}: {}", messages(&t));
        assert_eq!(counts(&t), (11, [4, 0, 0, 0], 0), "{file}");
        // The converter's sizes, bytes, in backward order (last layer first).
        let sizes: Vec<u64> = t
            .nodes
            .iter()
            .filter(|n| matches!(n.work, NodeWork::Collective(_)))
            .map(|n| n.size_bytes)
            .collect();
        assert_eq!(sizes, vec![524_288, 4_194_304, 2_097_152, 1_048_576]);
        assert!(t.diagnostics.is_empty(), "{file}: {}", messages(&t));
    }
    // HYBRID_DATA_MODEL, 3 layers, 2 passes: per pass 3 forward, 3 input-
    // and 3 weight-gradient compute nodes; forward all-gather, all-gather,
    // all-to-all, input-gradient reduce-scatter and all-to-all (not the
    // first layer), weight-gradient all-reduce per layer.
    let (file, bytes) = &set("text_hybrid", 1)[0];
    let t = chakra::parse(file, bytes);
    assert_eq!(t.nodes_read, 34);
    assert_eq!(counts(&t), (18, [6, 4, 2, 4], 0));
    // MICRO: one all-reduce per rank, no compute, no dependency.
    for (file, bytes) in set("text_micro", 2) {
        let t = chakra::parse(&file, &bytes);
        assert_eq!(t.nodes_read, 1);
        assert_eq!(counts(&t), (0, [1, 0, 0, 0], 0));
        assert_eq!(t.nodes[0].size_bytes, 8 << 20);
    }
}

#[test]
fn pytorch_converter_node_counts_and_what_is_not_modelled() {
    let (file, bytes) = &set("pytorch", 1)[0];
    let t = chakra::parse(file, bytes);
    assert_eq!(t.nodes_read, 262);
    // The one METADATA_NODE is skipped; every COMP_NODE is kept.
    assert_eq!(t.nodes_skipped, 1);
    assert_eq!(counts(&t), (261, [0; 4], 0));
    assert!(t.nodes.iter().all(|n| n.duration_ns == 0));
    let all = messages(&t);
    assert!(all.contains("1 METADATA_NODE node(s) skipped"), "{all}");
    assert!(
        all.contains("261 compute node(s)") && all.contains("neither duration_micros nor num_ops"),
        "{all}"
    );
    assert!(all.contains("are CPU operators (is_cpu_op)"), "{all}");
    // One warning per kind, located at its first node, never an error.
    assert!(t.diagnostics.iter().all(|d| !d.is_error()), "{all}");
    let located = t
        .diagnostics
        .iter()
        .filter(|d| d.short().contains("compute node(s)"))
        .collect::<Vec<_>>();
    assert_eq!(located.len(), 2, "{all}");
    assert!(located.iter().all(|d| d.location.is_some()), "{all}");
}

#[test]
fn every_converter_set_simulates() {
    // text_dp: each rank computes 520 (forward) + 485 (weight gradient) +
    // 365 (input gradient) µs, one after the other; the all-reduces add.
    let out = chakra_simulate(&set("text_dp", 4), None).expect("text_dp simulates");
    assert_eq!(out.format, Format::ChakraEt);
    assert_eq!(out.parallel.world(), 4);
    let t = out.result.summary.iteration_time_ns;
    assert!(t > 1_370_000, "{t}");
    // hybrid, 1 rank: compute of two passes, the collectives over one rank.
    let out = chakra_simulate(&set("text_hybrid", 1), None).expect("text_hybrid simulates");
    assert!(out.result.summary.iteration_time_ns >= 2 * (750 + 700 + 650) * 1000);
    // micro, 2 ranks: one 8 MiB all-reduce and nothing else.
    let out = chakra_simulate(&set("text_micro", 2), None).expect("text_micro simulates");
    assert!(out.result.summary.iteration_time_ns > 0);
    // pytorch: no compute time to replay, said in the warnings.
    let out = chakra_simulate(&set("pytorch", 1), None).expect("pytorch simulates");
    assert_eq!(out.format, Format::ChakraEt);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("neither duration_micros nor num_ops")),
        "{:?}",
        out.warnings
    );
}
