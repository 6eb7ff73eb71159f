//! `Linear`: `y = x Wᵀ + b`, PyTorch's layout and initialisation.

use crate::nn::Module;
use crate::{DType, Result, Tensor};

/// `y = x Wᵀ + b` with `W` `[out_features, in_features]` and `b` `[out_features]` (PyTorch's
/// `nn.Linear`, same layout, so state dicts carry over).
///
/// Initialised as PyTorch does (`kaiming_uniform_(a=√5)` for the weight, which is uniform in
/// `±1/√in_features`, and the same bound for the bias), from `seed`, in f32 on the CPU.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Linear, Module};
/// use autograd_runtime::{DType, Tensor};
/// let layer = Linear::new(3, 2, 7)?;
/// assert_eq!(layer.weight().shape(), &[2, 3]);
/// let y = layer.forward(&Tensor::zeros(&[5, 3], DType::F32)?)?;
/// assert_eq!(y.shape(), &[5, 2]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    /// A layer with a bias, initialised from `seed`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(in_features: usize, out_features: usize, seed: u64) -> Result<Linear> {
        let bound = 1.0 / (in_features.max(1) as f64).sqrt();
        let uniform = |shape: &[usize], seed| -> Result<Tensor> {
            Tensor::rand(shape, DType::F32, seed)?
                .mul_scalar(2.0 * bound)?
                .add_scalar(-bound)?
                .requires_grad_(true)
        };
        Ok(Linear {
            weight: uniform(&[out_features, in_features], seed)?,
            bias: Some(uniform(&[out_features], seed.wrapping_add(1))?),
        })
    }

    /// The weight, `[out_features, in_features]`.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias, `[out_features]`, if the layer has one.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl Module for Linear {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let y = input.matmul(&self.weight.transpose(0, 1)?)?;
        match &self.bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![("weight".to_string(), self.weight.clone())];
        if let Some(b) = &self.bias {
            out.push(("bias".to_string(), b.clone()));
        }
        out
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        f("weight", &mut self.weight)?;
        if let Some(b) = &mut self.bias {
            f("bias", b)?;
        }
        Ok(())
    }
}
