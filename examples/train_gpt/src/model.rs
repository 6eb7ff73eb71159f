//! The model: a decoder-only transformer with GPT-2's layout and nanoGPT's names (token and
//! position embeddings, pre-norm blocks of causal self-attention and an MLP, a final LayerNorm,
//! and the token embedding as the output projection: weight tying), line by line as the PyTorch
//! model in `reference/gpt_reference.py`.

use autograd::nn::functional::scaled_dot_product_attention;
use autograd::nn::functional::{CrossEntropyOptions, cross_entropy_tensor, gelu};
use autograd::nn::{Embedding, Forward, GeluApproximate, LayerNorm, Linear, Module, init};
use autograd::{DType, Result, Tensor};

/// The sizes of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Distinct tokens (characters).
    pub vocab_size: usize,
    /// The longest context, in tokens.
    pub block_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Attention heads per block.
    pub n_head: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
}

/// Multi-head causal self-attention with the three projections packed in one `Linear`
/// (`c_attn`), as GPT-2.
#[derive(Debug, Module)]
pub struct CausalSelfAttention {
    c_attn: Linear,
    c_proj: Linear,
    #[module(skip)]
    n_head: usize,
}

impl Forward for CausalSelfAttention {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let &[b, t, c] = x.shape() else {
            unreachable!("the model feeds [batch, time, channels]")
        };
        let heads = |part: &Tensor| {
            part.reshape(&[b, t, self.n_head, c / self.n_head])?
                .transpose(1, 2)
        };
        let qkv = self.c_attn.forward(x)?.split(&[c, c, c], 2)?;
        let (q, k, v) = (heads(&qkv[0])?, heads(&qkv[1])?, heads(&qkv[2])?);
        let y = scaled_dot_product_attention(&q, &k, &v, None, 0.0, true, None)?;
        self.c_proj
            .forward(&y.transpose(1, 2)?.contiguous()?.reshape(&[b, t, c])?)
    }
}

/// The feed-forward part of a block: `n_embd → 4·n_embd → n_embd` with GELU.
#[derive(Debug, Module)]
pub struct Mlp {
    c_fc: Linear,
    c_proj: Linear,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = gelu(&self.c_fc.forward(x)?, GeluApproximate::None)?;
        self.c_proj.forward(&h)
    }
}

/// A pre-norm transformer block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`.
#[derive(Debug, Module)]
pub struct Block {
    ln_1: LayerNorm,
    attn: CausalSelfAttention,
    ln_2: LayerNorm,
    mlp: Mlp,
}

impl Forward for Block {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = x.add(&self.attn.forward(&self.ln_1.forward(x)?)?)?;
        x.add(&self.mlp.forward(&self.ln_2.forward(&x)?)?)
    }
}

/// The whole model. Its `state_dict` has PyTorch's names (`wte.weight`, `h.0.attn.c_attn.weight`,
/// ..), so the reference model's weights load into it and the other way round.
#[derive(Debug, Module)]
pub struct Gpt {
    wte: Embedding,
    wpe: Embedding,
    h: Vec<Block>,
    ln_f: LayerNorm,
    #[module(skip)]
    config: Config,
}

impl Gpt {
    /// A model of `config`'s sizes with GPT-2's initialisation: `N(0, 0.02)` weights, zero
    /// biases, the residual projections scaled by `1/sqrt(2·n_layer)`. Layers are built with
    /// PyTorch's default initialisation first and then re-initialised in `named_parameters`
    /// order, as the reference does, so after the same `manual_seed` the weights are PyTorch's.
    pub fn new(config: Config) -> Result<Gpt> {
        let e = config.n_embd;
        let mut h = Vec::with_capacity(config.n_layer);
        let wte = Embedding::new(config.vocab_size, e)?;
        let wpe = Embedding::new(config.block_size, e)?;
        for _ in 0..config.n_layer {
            h.push(Block {
                ln_1: LayerNorm::new(&[e])?,
                attn: CausalSelfAttention {
                    c_attn: Linear::new(e, 3 * e)?,
                    c_proj: Linear::new(e, e)?,
                    n_head: config.n_head,
                },
                ln_2: LayerNorm::new(&[e])?,
                mlp: Mlp {
                    c_fc: Linear::new(e, 4 * e)?,
                    c_proj: Linear::new(4 * e, e)?,
                },
            });
        }
        let model = Gpt {
            wte,
            wpe,
            h,
            ln_f: LayerNorm::new(&[e])?,
            config,
        };
        let residual_std = 0.02 / (2.0 * config.n_layer as f64).sqrt();
        for (name, p) in model.named_parameters() {
            if name.ends_with("bias") {
                init::zeros_(&p)?;
            } else if name.starts_with("h.") && !name.contains(".ln_") {
                let std = if name.ends_with("c_proj.weight") {
                    residual_std
                } else {
                    0.02
                };
                init::normal_(&p, 0.0, std)?;
            } else if name == "wte.weight" || name == "wpe.weight" {
                init::normal_(&p, 0.0, 0.02)?;
            }
        }
        Ok(model)
    }

    /// The sizes this model was built with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The logits `[B, T, vocab_size]` of the next token after each position of `idx`
    /// (`[B, T]`, `I64`, `T ≤ block_size`).
    pub fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        let t = idx.shape()[1];
        let pos = Tensor::arange_dtype(0, t as i64, 1, DType::I64)?;
        let mut x = self.wte.forward(idx)?.add(&self.wpe.forward(&pos)?)?;
        for block in &self.h {
            x = block.forward(&x)?;
        }
        let x = self.ln_f.forward(&x)?;
        x.matmul(&self.wte.weight().t()?)
    }

    /// The mean cross-entropy of predicting `targets` (`[B, T]`, `I64`) from `idx`.
    pub fn loss(&self, idx: &Tensor, targets: &Tensor) -> Result<Tensor> {
        let logits = self.forward(idx)?;
        let v = self.config.vocab_size;
        let n = targets.numel();
        cross_entropy_tensor(
            &logits.reshape(&[n, v])?,
            &targets.reshape(&[n])?,
            &CrossEntropyOptions::default(),
        )
    }
}

/// How [`Gpt::generate`] picks each next token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Divides the logits: below 1 sharpens the distribution, above 1 flattens it.
    pub temperature: f64,
    /// Only the `top_k` most likely tokens can be drawn (`None`: all of them).
    pub top_k: Option<usize>,
}

impl Gpt {
    /// `new_tokens` tokens continuing `prompt`, each drawn from the model's distribution for the
    /// next token (the last `block_size` tokens as context) with `sampling`, uniforms from
    /// `generator`; nothing is recorded.
    pub fn generate(
        &self,
        prompt: &[i64],
        new_tokens: usize,
        sampling: Sampling,
        generator: &autograd::Generator,
    ) -> Result<Vec<i64>> {
        let _no_grad = autograd::no_grad();
        let device = self.wte.weight().device();
        let mut tokens = prompt.to_vec();
        for _ in 0..new_tokens {
            let start = tokens.len().saturating_sub(self.config.block_size);
            let context = &tokens[start..];
            let idx = Tensor::from_vec(context.to_vec(), &[1, context.len()])?.to(device)?;
            let logits = self.forward(&idx)?;
            let last = logits
                .narrow(1, context.len() - 1, 1)?
                .to(autograd::Device::Cpu)?
                .to_dtype(DType::F64)?
                .to_vec::<f64>()?;
            let u = Tensor::rand_with(&[1], DType::F64, generator)?.item::<f64>()?;
            tokens.push(pick(&last, sampling, u) as i64);
        }
        Ok(tokens)
    }
}

/// The token whose cumulative probability first exceeds `u` under `sampling`'s softmax of
/// `logits`.
fn pick(logits: &[f64], sampling: Sampling, u: f64) -> usize {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    order.truncate(sampling.top_k.unwrap_or(logits.len()).max(1));
    let top = logits[order[0]];
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| ((logits[i] - top) / sampling.temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    for (&i, w) in order.iter().zip(&weights) {
        acc += w / total;
        if u < acc {
            return i;
        }
    }
    order[order.len() - 1]
}

#[cfg(test)]
mod tests {
    use super::{Sampling, pick};

    #[test]
    fn top_k_and_temperature_shape_the_draw() {
        let logits = [0.0, 3.0, 1.0, 2.0];
        let greedy = Sampling {
            temperature: 1.0,
            top_k: Some(1),
        };
        assert_eq!(pick(&logits, greedy, 0.999), 1);
        let two = Sampling {
            temperature: 1.0,
            top_k: Some(2),
        };
        // Among tokens 1 and 3 only: p(1) = e^3 / (e^3 + e^2) = 0.731.
        assert_eq!(pick(&logits, two, 0.72), 1);
        assert_eq!(pick(&logits, two, 0.74), 3);
        let all = Sampling {
            temperature: 1.0,
            top_k: None,
        };
        assert_eq!(
            pick(&logits, all, 0.9999),
            0,
            "the least likely token comes last"
        );
    }
}
