//! The text: Shakespeare's plays as characters (see `data/README.md`), numbered in sorted order,
//! split 90/10 into training and validation text, and batches of random windows drawn as
//! nanoGPT's `get_batch` draws them.

use autograd::{DType, Generator, Result, Tensor};

/// The embedded text.
const SHAKESPEARE: &str = include_str!("../data/tinyshakespeare.txt");

/// A text as tokens: each distinct character is one token, numbered in sorted order.
#[derive(Clone, Debug)]
pub struct Corpus {
    chars: Vec<char>,
    /// The first 90% of the text.
    pub train: Vec<i64>,
    /// The last 10%.
    pub val: Vec<i64>,
}

impl Corpus {
    /// The embedded Shakespeare (65 distinct characters).
    pub fn shakespeare() -> Corpus {
        Corpus::new(SHAKESPEARE)
    }

    /// `text` as tokens, split as the reference splits it (`int(0.9 * len)`).
    pub fn new(text: &str) -> Corpus {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        let tokens: Vec<i64> = text
            .chars()
            .map(|c| {
                chars
                    .binary_search(&c)
                    .expect("every char is in the vocabulary") as i64
            })
            .collect();
        let cut = (0.9 * tokens.len() as f64) as usize;
        Corpus {
            chars,
            val: tokens[cut..].to_vec(),
            train: tokens[..cut].to_vec(),
        }
    }

    /// The number of distinct tokens.
    pub fn vocab_size(&self) -> usize {
        self.chars.len()
    }

    /// `text`'s tokens; characters outside the vocabulary are skipped.
    pub fn encode(&self, text: &str) -> Vec<i64> {
        text.chars()
            .filter_map(|c| self.chars.binary_search(&c).ok().map(|i| i as i64))
            .collect()
    }

    /// The text of `tokens`.
    pub fn decode(&self, tokens: &[i64]) -> String {
        tokens.iter().map(|&t| self.chars[t as usize]).collect()
    }
}

/// `batch_size` window starts in `tokens`, drawn from `generator` as PyTorch's
/// `torch.randint(len(data) - block_size, (batch_size,), generator=g)`.
pub fn offsets(
    tokens: &[i64],
    block_size: usize,
    batch_size: usize,
    generator: &Generator,
) -> Result<Vec<i64>> {
    let high = (tokens.len() - block_size) as i64;
    Tensor::randint_with(0, high, &[batch_size], generator)?.to_vec::<i64>()
}

/// The inputs `[B, T]` (the windows at `offsets`) and the targets (the same windows one token
/// later), as `I64` tensors.
pub fn batch(tokens: &[i64], offsets: &[i64], block_size: usize) -> Result<(Tensor, Tensor)> {
    let mut x = Vec::with_capacity(offsets.len() * block_size);
    let mut y = Vec::with_capacity(offsets.len() * block_size);
    for &o in offsets {
        let o = o as usize;
        x.extend_from_slice(&tokens[o..o + block_size]);
        y.extend_from_slice(&tokens[o + 1..o + 1 + block_size]);
    }
    let shape = [offsets.len(), block_size];
    let (x, y) = (Tensor::from_vec(x, &shape)?, Tensor::from_vec(y, &shape)?);
    debug_assert_eq!(x.dtype(), DType::I64);
    Ok((x, y))
}
