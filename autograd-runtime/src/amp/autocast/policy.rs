//! The ops of this crate in PyTorch's autocast lists, and the policy each has per device type.

use super::*;

/// The ops of this crate that appear in one of PyTorch's autocast lists (for the CPU or CUDA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Matmul,
    Bmm,
    Baddbmm,
    Linear,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    ScaledDotProductAttention,
    Einsum,
    LstmCell,
    GruCell,
    RnnTanhCell,
    RnnReluCell,
    Softmax,
    LogSoftmax,
    LayerNorm,
    GroupNorm,
    RmsNorm,
    Exp,
    Log,
    Log2,
    Log1p,
    Expm1,
    Reciprocal,
    Rsqrt,
    Pow,
    Softplus,
    Sum,
    Prod,
    Cumsum,
    Logsumexp,
    VectorNorm,
    MseLoss,
    NllLoss,
    CrossEntropyLoss,
    BinaryCrossEntropyWithLogits,
    Upsample,
    Cat,
    Stack,
    ScatterAdd,
    Atan2,
}

impl Op {
    /// Every op, for lookups by name.
    pub(super) const ALL: [Op; 41] = [
        Op::Matmul,
        Op::Bmm,
        Op::Baddbmm,
        Op::Linear,
        Op::Conv1d,
        Op::Conv2d,
        Op::ConvTranspose2d,
        Op::ScaledDotProductAttention,
        Op::Einsum,
        Op::LstmCell,
        Op::GruCell,
        Op::RnnTanhCell,
        Op::RnnReluCell,
        Op::Softmax,
        Op::LogSoftmax,
        Op::LayerNorm,
        Op::GroupNorm,
        Op::RmsNorm,
        Op::Exp,
        Op::Log,
        Op::Log2,
        Op::Log1p,
        Op::Expm1,
        Op::Reciprocal,
        Op::Rsqrt,
        Op::Pow,
        Op::Softplus,
        Op::Sum,
        Op::Prod,
        Op::Cumsum,
        Op::Logsumexp,
        Op::VectorNorm,
        Op::MseLoss,
        Op::NllLoss,
        Op::CrossEntropyLoss,
        Op::BinaryCrossEntropyWithLogits,
        Op::Upsample,
        Op::Cat,
        Op::Stack,
        Op::ScatterAdd,
        Op::Atan2,
    ];

    /// PyTorch's (ATen) name of the op. `Upsample` stands for `interpolate`'s kernels
    /// (`upsample_nearest1d` ... `upsample_trilinear3d`), `VectorNorm` for `norm` without a
    /// dtype (`linalg_vector_norm`).
    pub(super) fn name(self) -> &'static str {
        match self {
            Op::Matmul => "matmul",
            Op::Bmm => "bmm",
            Op::Baddbmm => "baddbmm",
            Op::Linear => "linear",
            Op::Conv1d => "conv1d",
            Op::Conv2d => "conv2d",
            Op::ConvTranspose2d => "conv_transpose2d",
            Op::ScaledDotProductAttention => "scaled_dot_product_attention",
            Op::Einsum => "einsum",
            Op::LstmCell => "lstm_cell",
            Op::GruCell => "gru_cell",
            Op::RnnTanhCell => "rnn_tanh_cell",
            Op::RnnReluCell => "rnn_relu_cell",
            Op::Softmax => "softmax",
            Op::LogSoftmax => "log_softmax",
            Op::LayerNorm => "layer_norm",
            Op::GroupNorm => "group_norm",
            Op::RmsNorm => "rms_norm",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Log2 => "log2",
            Op::Log1p => "log1p",
            Op::Expm1 => "expm1",
            Op::Reciprocal => "reciprocal",
            Op::Rsqrt => "rsqrt",
            Op::Pow => "pow",
            Op::Softplus => "softplus",
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Cumsum => "cumsum",
            Op::Logsumexp => "logsumexp",
            Op::VectorNorm => "linalg_vector_norm",
            Op::MseLoss => "mse_loss",
            Op::NllLoss => "nll_loss",
            Op::CrossEntropyLoss => "cross_entropy_loss",
            Op::BinaryCrossEntropyWithLogits => "binary_cross_entropy_with_logits",
            Op::Upsample => "upsample",
            Op::Cat => "cat",
            Op::Stack => "stack",
            Op::ScatterAdd => "scatter_add",
            Op::Atan2 => "atan2",
        }
    }

    /// The op's policy on `device`: PyTorch 2.15's lists (see the module docs).
    pub(super) fn policy(self, device: DeviceType) -> Option<CastPolicy> {
        use CastPolicy::*;
        match device {
            // `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)`.
            DeviceType::Cpu => match self {
                Op::Matmul
                | Op::Bmm
                | Op::Baddbmm
                | Op::Linear
                | Op::Conv1d
                | Op::Conv2d
                | Op::ConvTranspose2d
                | Op::ScaledDotProductAttention => Some(LowerPrecisionFp),
                Op::Prod
                | Op::MseLoss
                | Op::NllLoss
                | Op::CrossEntropyLoss
                | Op::BinaryCrossEntropyWithLogits => Some(Fp32),
                Op::Cat | Op::Stack => Some(Promote),
                _ => None,
            },
            // `AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`, `AT_FORALL_FP32_SET_OPT_DTYPE`,
            // `AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE` (norm), `AT_FORALL_PROMOTE`.
            DeviceType::Cuda => match self {
                Op::Matmul
                | Op::Bmm
                | Op::Baddbmm
                | Op::Linear
                | Op::Conv1d
                | Op::Conv2d
                | Op::ConvTranspose2d
                | Op::ScaledDotProductAttention
                | Op::Einsum
                | Op::LstmCell
                | Op::GruCell
                | Op::RnnTanhCell
                | Op::RnnReluCell => Some(LowerPrecisionFp),
                Op::Exp
                | Op::Log
                | Op::Log2
                | Op::Log1p
                | Op::Expm1
                | Op::Reciprocal
                | Op::Rsqrt
                | Op::Pow
                | Op::Softplus
                | Op::LayerNorm
                | Op::GroupNorm
                | Op::RmsNorm
                | Op::Logsumexp
                | Op::MseLoss
                | Op::NllLoss
                | Op::BinaryCrossEntropyWithLogits
                | Op::Upsample => Some(Fp32),
                Op::Softmax | Op::LogSoftmax | Op::Sum | Op::Prod | Op::Cumsum | Op::VectorNorm => {
                    Some(Fp32SetOptDtype)
                }
                Op::ScatterAdd | Op::Atan2 => Some(Promote),
                // Composite in PyTorch (its parts are listed), or not in CUDA's lists.
                Op::CrossEntropyLoss | Op::Cat | Op::Stack => None,
            },
        }
    }
}
