//! How a stage's per-micro-batch block is cut into model chunks (virtual
//! stages), as Megatron-LM does it: each chunk gets layers / (p·v) whole
//! transformer layers (p stages, v chunks per rank), the embedding goes with
//! the first chunk and the output layer with the last (MODEL-JOBS.md,
//! "Virtual stages"). The rows of a block are not layers: a SimAI/AICB block
//! writes one transformer layer as several rows (`attention_column`,
//! `attention_row`, `mlp_column`, `mlp_row`; or `attention_norm`,
//! `mlp_norm`) between an `embedding_layer` row and a closing row
//! (`final_column`, `embedding_norm`). Cutting by rows would put the
//! embedding and a partial layer in one chunk and make it longer than the
//! others.
//!
//! How a block's layers are recognised ([`BlockLayers::of`]):
//! - when some row's name starts with `attention`, a transformer layer
//!   starts at each such row whose previous row's name does not (one layer =
//!   the rows from one attention group to the next); the rows before the
//!   first layer are the block's head (the embedding), the rows after the
//!   last layer's mlp rows (final norm, output layer) its tail;
//! - without any `attention*` row every row is one layer (NeuSight ops,
//!   measured and hand-written jobs), with no head and no tail.
//!
//! With v chunks, chunk c gets layers [c·L/v, (c+1)·L/v) of the L layers:
//! its rows run from its first layer's start to the next chunk's first
//! layer's start, so chunk 0 also gets the head and chunk v - 1 everything
//! after its last layer's start (the last layer and the tail). In an SPMD job every
//! stage runs the same block, so every stage's first chunk has the
//! embedding row the file describes (on stage 0 exactly Megatron's
//! placement). L must be a multiple of v ([`SimError::TooFewLayers`] when
//! L < v, [`SimError::LayersNotDivisible`] otherwise). With v = 1 the one
//! chunk is the whole block, whatever its layers. A program whose chunks
//! differ (a model-level job with the embedding or loss counted as layers
//! in the pipeline split) gives their layer counts, and
//! [`BlockLayers::chunk_rows_of`] cuts by them the same way.

use crate::engine::spec::Block;
use crate::engine::SimError;
use std::ops::Range;

/// The layer structure of a block (row indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLayers {
    /// First row of each transformer layer, ascending.
    pub starts: Vec<usize>,
    /// Rows in the block.
    pub rows: usize,
}

fn opens_attention(name: &str) -> bool {
    name.starts_with("attention")
}

impl BlockLayers {
    /// Recognise the layers of `block` (see the module documentation).
    pub fn of(block: &Block) -> BlockLayers {
        let rows = block.layers.len();
        let names: Vec<&str> = block.layers.iter().map(|l| l.name.as_str()).collect();
        let starts: Vec<usize> = (0..rows)
            .filter(|&i| opens_attention(names[i]) && (i == 0 || !opens_attention(names[i - 1])))
            .collect();
        if starts.is_empty() {
            return BlockLayers {
                starts: (0..rows).collect(),
                rows,
            };
        }
        BlockLayers { starts, rows }
    }

    /// Number of transformer layers.
    pub fn layers(&self) -> usize {
        self.starts.len()
    }

    /// The rows of each of `v` chunks, in chunk order: whole layers, L / v
    /// each, the head with chunk 0 and the tail with chunk v - 1. `stage`
    /// and `stages` only name the numbers in the error.
    pub fn chunk_rows(
        &self,
        v: u32,
        stage: u32,
        stages: u32,
    ) -> Result<Vec<Range<usize>>, SimError> {
        if v <= 1 {
            return Ok(std::iter::once(0..self.rows).collect());
        }
        let l = self.layers();
        let vu = v as usize;
        if l < vu {
            return Err(SimError::TooFewLayers {
                layers: l,
                virtual_stages: v,
            });
        }
        if !l.is_multiple_of(vu) {
            return Err(SimError::LayersNotDivisible {
                stage,
                layers: l,
                stages,
                virtual_stages: v,
            });
        }
        let per = l / vu;
        Ok(self.cut(&vec![per; vu]))
    }

    /// The rows of chunks of `counts[c]` whole layers each (the program's
    /// [`crate::engine::spec::RankProgram::chunk_layers`]): the head with chunk
    /// 0, the tail with the last; a chunk of no layer is the head (or the
    /// tail) alone, else empty. `counts` must have `v` entries that add up
    /// to the block's layers.
    pub fn chunk_rows_of(
        &self,
        counts: &[u32],
        v: u32,
        stage: u32,
    ) -> Result<Vec<Range<usize>>, SimError> {
        let total: u64 = counts.iter().map(|c| u64::from(*c)).sum();
        if counts.len() != v.max(1) as usize || total != self.layers() as u64 {
            return Err(SimError::InvalidJob(format!(
                "stage {stage}: chunk layer counts {counts:?} do not cut its {} layers into {v} chunks",
                self.layers()
            )));
        }
        let counts: Vec<usize> = counts.iter().map(|c| *c as usize).collect();
        Ok(self.cut(&counts))
    }

    /// Consecutive chunks of `counts[c]` layers (adding up to the layers).
    fn cut(&self, counts: &[usize]) -> Vec<Range<usize>> {
        let mut first_layer = 0;
        let n = counts.len();
        counts
            .iter()
            .enumerate()
            .map(|(c, k)| {
                let start = |layer: usize| self.starts.get(layer).copied().unwrap_or(self.rows);
                let lo = if c == 0 { 0 } else { start(first_layer) };
                first_layer += k;
                let hi = if c + 1 == n {
                    self.rows
                } else {
                    start(first_layer)
                };
                lo..hi
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::spec::LayerSpec;

    fn block(names: &[&str]) -> Block {
        Block {
            layers: names
                .iter()
                .map(|n| LayerSpec::compute(n, 1, 1, 1))
                .collect(),
        }
    }

    #[test]
    fn aicb_block_with_four_rows_per_layer() {
        let mut names = vec!["embedding_layer"];
        for _ in 0..4 {
            names.extend(["attention_column", "attention_row", "mlp_column", "mlp_row"]);
        }
        names.push("final_column");
        let b = block(&names);
        let l = BlockLayers::of(&b);
        assert_eq!(l.starts, vec![1, 5, 9, 13]);
        assert_eq!(l.chunk_rows(2, 0, 4).unwrap(), vec![0..9, 9..18]);
        assert_eq!(
            l.chunk_rows(4, 0, 4).unwrap(),
            vec![0..5, 5..9, 9..13, 13..18]
        );
        assert_eq!(l.chunk_rows(1, 0, 4).unwrap(), vec![0..18]);
        assert_eq!(
            l.chunk_rows(3, 2, 4).unwrap_err(),
            SimError::LayersNotDivisible {
                stage: 2,
                layers: 4,
                stages: 4,
                virtual_stages: 3
            }
        );
        assert_eq!(
            l.chunk_rows(5, 0, 4).unwrap_err(),
            SimError::TooFewLayers {
                layers: 4,
                virtual_stages: 5
            }
        );
    }

    #[test]
    fn two_rows_per_layer_and_a_norm_tail() {
        // seed simai_llama65b: attention_norm, mlp_norm per layer.
        let mut names = vec!["embedding_layer"];
        for _ in 0..3 {
            names.extend(["attention_norm", "mlp_norm"]);
        }
        names.push("embedding_norm");
        let l = BlockLayers::of(&block(&names));
        assert_eq!(l.starts, vec![1, 3, 5]);
        assert_eq!(l.chunk_rows(3, 0, 1).unwrap(), vec![0..3, 3..5, 5..8]);
    }

    /// Explicit counts (the embedding counted as a layer on stage 0's first
    /// chunk): chunk 0 is the head and one layer, the others two.
    #[test]
    fn explicit_counts_cut_uneven_chunks() {
        let mut names = vec!["embedding_layer"];
        for _ in 0..5 {
            names.extend(["attention_norm", "mlp_norm"]);
        }
        names.push("final_norm");
        let l = BlockLayers::of(&block(&names));
        assert_eq!(
            l.chunk_rows_of(&[1, 2, 2], 3, 0).unwrap(),
            vec![0..3, 3..7, 7..12]
        );
        assert_eq!(
            l.chunk_rows_of(&[2, 2, 1], 3, 0).unwrap(),
            vec![0..5, 5..9, 9..12]
        );
        assert!(l.chunk_rows_of(&[2, 2, 2], 3, 0).is_err());
        assert!(l.chunk_rows_of(&[3, 2], 3, 0).is_err());
    }

    #[test]
    fn without_attention_rows_every_row_is_a_layer() {
        let l = BlockLayers::of(&block(&["a", "b", "c", "d"]));
        assert_eq!(l.layers(), 4);
        assert_eq!(l.chunk_rows(2, 0, 1).unwrap(), vec![0..2, 2..4]);
        assert!(l.chunk_rows(3, 0, 1).is_err());
    }

    #[test]
    fn a_single_layer_is_one_chunk() {
        let l = BlockLayers::of(&block(&["embedding_layer", "attention", "mlp", "final"]));
        assert_eq!(l.starts, vec![1]);
        assert_eq!(l.chunk_rows(1, 0, 1).unwrap(), vec![0..4]);
        assert!(l.chunk_rows(2, 0, 1).is_err());
    }
}
