//! The bundled example files (copied into `dist/examples/` by Trunk from
//! `www/examples/`), each with a one-line description for the gallery.

/// One bundled example: its file name under `examples/` and what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    pub file_name: &'static str,
    pub description: &'static str,
}

/// The gallery, in display order.
pub const EXAMPLES: [Example; 5] = [
    Example {
        file_name: "simai_llama65b_tp8_pp4_vpp8.txt",
        description: "SimAI/AICB workload: LLaMA-65B, TP 8, PP 4, 512 GPUs",
    },
    Example {
        file_name: "simai_405b_tp8_pp16_ga16_sp.txt",
        description: "SimAI/AICB workload: 405B model, TP 8, PP 16, GA 16, 1024 GPUs",
    },
    Example {
        file_name: "neusight_gpt2large_dp_workitems.tsv",
        description: "NeuSight predicted ops: one GPT-2-large block, data parallel",
    },
    Example {
        file_name: "echo_megatron_trace_rank7_tp2_pp4.txt",
        description: "Echo Megatron trace: measured ops of rank 7 (TP 2, PP 4)",
    },
    Example {
        file_name: "optimus_prime_llama1b_pp8_train.log",
        description: "Optimus-Prime training log: Llama 3.2 1B, PP 8, 1F1B",
    },
];

/// Relative URL of an example (works from any sub-path of a static host).
pub fn example_url(file_name: &str) -> String {
    format!("examples/{file_name}")
}
