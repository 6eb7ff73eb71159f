//! The autocast entries of the ops with many arguments: each is [`dispatch`] with the op's
//! tensor arguments and a closure that calls the op again on the cast ones.

use super::{Op, dispatch};
use crate::nn::functional::{BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction};
use crate::nn::{InterpolateMode, Spatial};
use crate::{Result, Tensor, nn::functional as f};

type Entry<T = Tensor> = Option<Result<T>>;

pub(crate) fn baddbmm(s: &Tensor, b1: &Tensor, b2: &Tensor, beta: f64, alpha: f64) -> Entry {
    dispatch(Op::Baddbmm, (s, b1, b2), |(s, a, b)| {
        s.baddbmm(&a, &b, beta, alpha)
    })
}

pub(crate) fn scatter_add(s: &Tensor, dim: isize, index: &Tensor, src: &Tensor) -> Entry {
    dispatch(Op::ScatterAdd, (s, index, src), |(s, i, x)| {
        s.scatter_add(dim, &i, &x)
    })
}

pub(crate) fn einsum(equation: &str, operands: &[&Tensor]) -> Entry {
    dispatch(Op::Einsum, operands, |ops| {
        crate::einsum(equation, &ops.iter().collect::<Vec<_>>())
    })
}

pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Entry {
    dispatch(Op::Linear, (x, w, b), |(x, w, b)| {
        f::linear(&x, &w, b.as_ref())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv1d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
) -> Entry {
    dispatch(Op::Conv1d, (x, w, b), |(x, w, b)| {
        f::conv1d(&x, &w, b.as_ref(), stride, padding, dilation, groups)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Entry {
    dispatch(Op::Conv2d, (x, w, b), |(x, w, b)| {
        f::conv2d(&x, &w, b.as_ref(), stride, padding, dilation, groups)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_transpose2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    groups: usize,
    dilation: [usize; 2],
) -> Entry {
    dispatch(Op::ConvTranspose2d, (x, w, b), |(x, w, b)| {
        let (s, p, o, d) = (stride, padding, output_padding, dilation);
        f::conv_transpose2d(&x, &w, b.as_ref(), s, p, o, groups, d)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn sdpa(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Entry {
    dispatch(
        Op::ScaledDotProductAttention,
        (q, k, v, mask),
        |(q, k, v, m)| {
            f::scaled_dot_product_attention(&q, &k, &v, m.as_ref(), dropout_p, is_causal, scale)
        },
    )
}

pub(crate) fn layer_norm(
    x: &Tensor,
    shape: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Entry {
    dispatch(Op::LayerNorm, (x, w, b), |(x, w, b)| {
        f::layer_norm(&x, shape, w.as_ref(), b.as_ref(), eps)
    })
}

pub(crate) fn group_norm(
    x: &Tensor,
    groups: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Entry {
    dispatch(Op::GroupNorm, (x, w, b), |(x, w, b)| {
        f::group_norm(&x, groups, w.as_ref(), b.as_ref(), eps)
    })
}

pub(crate) fn rms_norm(x: &Tensor, shape: &[usize], w: Option<&Tensor>, eps: Option<f64>) -> Entry {
    dispatch(Op::RmsNorm, (x, w), |(x, w)| {
        f::rms_norm(&x, shape, w.as_ref(), eps)
    })
}

pub(crate) fn interpolate(
    x: &Tensor,
    size: &Option<Spatial<usize>>,
    scale_factor: &Option<Spatial<f64>>,
    mode: InterpolateMode,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
) -> Entry {
    if mode == InterpolateMode::Area {
        // `adaptive_avg_pool`, in no list.
        return None;
    }
    dispatch(Op::Upsample, x, |x| {
        let (size, scale) = (size.clone(), scale_factor.clone());
        f::interpolate(&x, size, scale, mode, align_corners, recompute_scale_factor)
    })
}

pub(crate) fn lstm_cell(
    x: &Tensor,
    hx: (&Tensor, &Tensor),
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Entry<(Tensor, Tensor)> {
    let args = (x, hx.0, hx.1, w_ih, w_hh, b_ih, b_hh);
    dispatch(Op::LstmCell, args, |(x, h, c, wi, wh, bi, bh)| {
        f::lstm_cell(&x, (&h, &c), &wi, &wh, bi.as_ref(), bh.as_ref())
    })
}

/// The three single-state cells: `gru_cell`, `rnn_tanh_cell`, `rnn_relu_cell`.
macro_rules! cell {
    ($name:ident, $op:ident) => {
        pub(crate) fn $name(
            x: &Tensor,
            hx: &Tensor,
            w_ih: &Tensor,
            w_hh: &Tensor,
            b_ih: Option<&Tensor>,
            b_hh: Option<&Tensor>,
        ) -> Entry {
            let args = (x, hx, w_ih, w_hh, b_ih, b_hh);
            dispatch(Op::$op, args, |(x, h, wi, wh, bi, bh)| {
                f::$name(&x, &h, &wi, &wh, bi.as_ref(), bh.as_ref())
            })
        }
    };
}
cell!(gru_cell, GruCell);
cell!(rnn_tanh_cell, RnnTanhCell);
cell!(rnn_relu_cell, RnnReluCell);

pub(crate) fn nll_loss(x: &Tensor, targets: &[usize], o: &NllLossOptions) -> Entry {
    dispatch(Op::NllLoss, (x, o.weight.as_ref()), |(x, weight)| {
        f::nll_loss(
            &x,
            targets,
            &NllLossOptions {
                weight,
                ..o.clone()
            },
        )
    })
}

pub(crate) fn nll_loss_tensor(x: &Tensor, t: &Tensor, o: &NllLossOptions) -> Entry {
    dispatch(Op::NllLoss, (x, t, o.weight.as_ref()), |(x, t, weight)| {
        f::nll_loss_tensor(
            &x,
            &t,
            &NllLossOptions {
                weight,
                ..o.clone()
            },
        )
    })
}

pub(crate) fn cross_entropy(x: &Tensor, targets: &[usize], o: &CrossEntropyOptions) -> Entry {
    dispatch(
        Op::CrossEntropyLoss,
        (x, o.weight.as_ref()),
        |(x, weight)| {
            f::cross_entropy(
                &x,
                targets,
                &CrossEntropyOptions {
                    weight,
                    ..o.clone()
                },
            )
        },
    )
}

pub(crate) fn cross_entropy_tensor(x: &Tensor, t: &Tensor, o: &CrossEntropyOptions) -> Entry {
    dispatch(
        Op::CrossEntropyLoss,
        (x, t, o.weight.as_ref()),
        |(x, t, weight)| {
            f::cross_entropy_tensor(
                &x,
                &t,
                &CrossEntropyOptions {
                    weight,
                    ..o.clone()
                },
            )
        },
    )
}

pub(crate) fn mse_loss(x: &Tensor, t: &Tensor, reduction: Reduction) -> Entry {
    dispatch(Op::MseLoss, (x, t), |(x, t)| f::mse_loss(&x, &t, reduction))
}

pub(crate) fn binary_cross_entropy_with_logits(
    x: &Tensor,
    t: &Tensor,
    o: &BceWithLogitsOptions,
) -> Entry {
    let args = (x, t, o.weight.as_ref(), o.pos_weight.as_ref());
    dispatch(
        Op::BinaryCrossEntropyWithLogits,
        args,
        |(x, t, weight, pos_weight)| {
            let o = BceWithLogitsOptions {
                weight,
                pos_weight,
                ..o.clone()
            };
            f::binary_cross_entropy_with_logits(&x, &t, &o)
        },
    )
}
