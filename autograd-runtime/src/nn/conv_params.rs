//! What the convolution layers (`Conv1d`, `Conv2d`, `ConvTranspose2d`) share: PyTorch's
//! `_ConvNd.reset_parameters` from the global generator, redrawing for a builder option that
//! changes the parameters, `_ConvNd`'s checks of `groups`, and its `extra_repr`.

use super::init;
use super::repr::py_tuple;
use crate::{DType, Error, Generator, GeneratorState, Result, Tensor, default_generator};

/// PyTorch's `_ConvNd.reset_parameters` from the global generator, for any convolution:
/// `kaiming_uniform_(a=√5)` on a `weight_shape` weight, which is uniform in `±1/√fan_in`
/// (`fan_in = weight_shape[1] · kernel volume`, as `_calculate_fan_in_and_fan_out`), then a
/// bias of `bias` elements (if any) uniform in `±1/√fan_in`; f32 leaves that require grad, and
/// the generator's state between the two.
pub(super) fn init_parameters(
    weight_shape: &[usize],
    bias: Option<usize>,
) -> Result<(Tensor, Option<Tensor>, GeneratorState)> {
    let weight = Tensor::zeros(weight_shape, DType::F32)?;
    init::kaiming_uniform_(
        &weight,
        5f64.sqrt(),
        init::FanMode::FanIn,
        init::Nonlinearity::LeakyRelu,
    )?;
    let after_weight = default_generator().get_state();
    let bias = match bias {
        Some(len) => {
            let fan_in: usize = weight_shape[1..].iter().product();
            let bound = if fan_in > 0 {
                1.0 / (fan_in as f64).sqrt()
            } else {
                0.0
            };
            let b = Tensor::zeros(&[len], DType::F32)?;
            init::uniform_(&b, -bound, bound)?;
            Some(b.requires_grad_(true)?)
        }
        None => None,
    };
    Ok((weight.requires_grad_(true)?, bias, after_weight))
}

/// Where a layer's parameters were drawn: the generator, its state before, and its state after
/// the weight. A builder option that changes the parameters (`groups`, `without_bias`) draws
/// them again from there, so the layer and the generator end as PyTorch's built with that
/// option from the start (draws made in between are drawn again).
#[derive(Debug)]
pub(super) struct Drawn {
    generator: Generator,
    before: GeneratorState,
    after_weight: GeneratorState,
}

impl Drawn {
    /// [`init_parameters`] from the global generator, remembering where.
    pub(super) fn new(
        weight_shape: &[usize],
        bias: Option<usize>,
    ) -> Result<(Tensor, Option<Tensor>, Drawn)> {
        let generator = default_generator();
        let before = generator.get_state();
        let (weight, bias, after_weight) = init_parameters(weight_shape, bias)?;
        let drawn = Drawn {
            generator,
            before,
            after_weight,
        };
        Ok((weight, bias, drawn))
    }

    /// The parameters drawn again, from the state [`Drawn::new`] started from.
    pub(super) fn redraw(
        &mut self,
        weight_shape: &[usize],
        bias: Option<usize>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        self.generator.set_state(&self.before);
        let (weight, bias, after_weight) = init_parameters(weight_shape, bias)?;
        self.after_weight = after_weight;
        Ok((weight, bias))
    }

    /// Takes `bias` away, and its draws with it: PyTorch's layer without a bias draws none.
    pub(super) fn drop_bias(&self, bias: &mut Option<Tensor>) {
        if bias.take().is_some() {
            self.generator.set_state(&self.after_weight);
        }
    }
}

/// `_ConvNd.__init__`'s checks of `groups`, in PyTorch's words.
pub(super) fn check_groups(in_channels: usize, out_channels: usize, groups: usize) -> Result<()> {
    let message = if groups == 0 {
        "groups must be a positive integer"
    } else if !in_channels.is_multiple_of(groups) {
        "in_channels must be divisible by groups"
    } else if !out_channels.is_multiple_of(groups) {
        "out_channels must be divisible by groups"
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument(message.into()))
}

/// `_ConvNd.extra_repr`: `in, out, kernel_size=(..), stride=(..)`, then each remaining
/// `(name, value, default)` that differs from its default, `groups` when not 1 and
/// `bias=False` without a bias.
pub(super) fn conv_repr(
    in_channels: usize,
    out_channels: usize,
    sizes: &[(&str, &[usize], Option<usize>)],
    groups: usize,
    bias: bool,
) -> String {
    let mut s = format!("{in_channels}, {out_channels}");
    for (name, value, default) in sizes {
        if default.is_none_or(|d| value.iter().any(|&v| v != d)) {
            s += &format!(", {name}={}", py_tuple(value));
        }
    }
    if groups != 1 {
        s += &format!(", groups={groups}");
    }
    if !bias {
        s += ", bias=False";
    }
    s
}
