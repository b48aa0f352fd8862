//! Reference data measured on an NVIDIA H100 SXM (80 GB HBM3) with
//! `scripts/measure-gpu.py` (how, when and with what software:
//! `tests/fixtures/measured/h100-sxm/README.md`): two real PyTorch 2.11
//! profiler traces of a training step, read by the Kineto parser, and the
//! GEMM / attention / bandwidth sweeps the H100 preset's efficiency curves
//! are checked against.

use trainscope_core::inspect::inspect_set;
use trainscope_tests::fixture_bytes;

const DIR: &str = "measured/h100-sxm";

/// The PyTorch 2.11 traces write the GPU `ProfilerStep#N` annotation as a
/// one-microsecond mark; the step's GPU extent comes from the kernels whose
/// launches ran inside the host step. Expected values computed
/// independently from the JSON (Python, `decimal`): first start to last end
/// of the GPU ops whose `cudaLaunchKernel`/`cudaMemcpyAsync` (joined by
/// `correlation`) lies in the host `ProfilerStep#2`.
#[test]
fn real_pytorch_traces_take_each_step_from_its_launched_work() {
    for (file, kernels, step2_ns) in [
        ("kineto-llama3.2-1b-mb2-s2048.json.gz", 5318, 150_024_505),
        (
            "kineto-llama3-8b-8layers-mb1-s4096.json.gz",
            3706,
            185_555_144,
        ),
    ] {
        let rel = format!("{DIR}/{file}");
        let bytes = fixture_bytes(&rel);
        let s = inspect_set(&[(rel.as_str(), bytes.as_slice())], None);
        assert_eq!(s.len(), 1);
        let f = &s[0];
        assert!(f.usable, "{file}: {:?}", f.diagnostics);
        let k = f.kineto.as_ref().unwrap();
        assert_eq!(k.iterations, vec![1, 2], "{file}");
        assert_eq!(k.iteration, Some(2), "{file}");
        assert_eq!(k.kernels, kernels, "{file}");
        // One-rank NCCL group: DDP's all-reduces run no NCCL kernel.
        assert_eq!(k.collectives, 0, "{file}");
        assert_eq!((k.rank, k.world), (Some(0), Some(1)), "{file}");
        assert_eq!(f.iteration_times_ns, Some(vec![step2_ns]), "{file}");
        assert!(
            f.diagnostics.iter().all(|d| !d.is_error()),
            "{file}: {:?}",
            f.diagnostics
        );
    }
}
