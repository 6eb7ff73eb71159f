//! Element-wise unary ops (`neg exp log sin cos tanh sigmoid relu sqrt abs pow`). Each gradient
//! formula saves either the input or the result, as PyTorch's `derivatives.yaml` does.

use smallvec::smallvec;

use crate::backend::cpu::{self, UnaryOp};
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta, SavedTensor};
use crate::tensor::data::with_view;
use crate::{Result, Tensor};

impl Tensor {
    /// Applies an element-wise kernel without recording anything.
    pub(crate) fn unary_kernel(&self, op: UnaryOp) -> Tensor {
        let device = self.device();
        with_view!(self, |a| Tensor::from_ndarray_on(cpu::unary(op, a), device))
    }

    /// Whether any element is NaN (anomaly mode).
    pub(crate) fn has_nan(&self) -> bool {
        with_view!(self, |a| cpu::has_nan(a))
    }
}

/// Defines a unary op: `$method` computes `UnaryOp::$op`; its node `$node` saves the input
/// (`input`) or the result (`result`) as `x` and computes the gradient with `$formula(g, x)`.
macro_rules! unary_op {
    ($(#[$doc:meta])* $method:ident, $op:ident, $node:ident, $name:literal, $saves:ident, |$g:ident, $x:ident| $formula:expr) => {
        struct $node {
            saved: SavedTensor,
        }

        impl Backward for $node {
            const NAME: &'static str = $name;
            fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
                let $g = grads[0].as_ref().expect("invariant: incoming gradients are materialised");
                let $x = self.saved.get()?;
                Ok(smallvec![Some($formula)])
            }
            fn release(&self) {
                self.saved.release();
            }
        }

        impl Tensor {
            $(#[$doc])*
            ///
            /// # Errors
            ///
            /// Infallible on the CPU; kept fallible like every op.
            pub fn $method(&self) -> Result<Tensor> {
                let out = self.unary_kernel(UnaryOp::$op);
                if let Some(edges) = collect_next_edges(&[self]) {
                    record(edges, &[&out], |node| $node {
                        saved: unary_op!(@save $saves, self, out, node),
                    });
                }
                Ok(out)
            }
        }
    };
    (@save input, $self:ident, $out:ident, $node:ident) => {{
        let _ = $node;
        SavedTensor::input($self)
    }};
    (@save result, $self:ident, $out:ident, $node:ident) => { SavedTensor::output(&$out, $node.clone(), 0) };
}

unary_op!(
    /// `eˣ` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).exp()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    exp, Exp, ExpBackward, "ExpBackward0", result, |g, r| g.mul(&r)?
);
unary_op!(
    /// Natural logarithm element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(1.0f64).log()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    log, Log, LogBackward, "LogBackward0", input, |g, x| g.div(&x)?
);
unary_op!(
    /// Sine element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).sin()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    sin, Sin, SinBackward, "SinBackward0", input, |g, x| g.mul(&x.cos()?)?
);
unary_op!(
    /// Cosine element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).cos()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    cos, Cos, CosBackward, "CosBackward0", input, |g, x| g.mul(&x.sin()?)?.neg()?
);
unary_op!(
    /// Hyperbolic tangent element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).tanh()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    tanh, Tanh, TanhBackward, "TanhBackward0", result, |g, r| g.mul(&r.mul(&r)?.rsub_scalar(1.0)?)?
);
unary_op!(
    /// Logistic sigmoid `1 / (1 + e⁻ˣ)` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).sigmoid()?.item::<f64>()?, 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    sigmoid, Sigmoid, SigmoidBackward, "SigmoidBackward0", result, |g, r| g.mul(&r.mul(&r.rsub_scalar(1.0)?)?)?
);
unary_op!(
    /// `max(x, 0)` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![-1.0f32, 2.0], &[2])?;
    /// assert_eq!(t.relu()?.to_vec::<f32>()?, vec![0.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    relu, Relu, ReluBackward, "ReluBackward0", result, |g, r| g.mul(&r.unary_kernel(UnaryOp::PositiveMask))?
);
unary_op!(
    /// Square root element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(9.0f64).sqrt()?.item::<f64>()?, 3.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    sqrt, Sqrt, SqrtBackward, "SqrtBackward0", result, |g, r| g.div(&r.mul_scalar(2.0)?)?
);
unary_op!(
    /// Absolute value element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(-2.0f64).abs()?.item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    abs, Abs, AbsBackward, "AbsBackward0", input, |g, x| g.mul(&x.unary_kernel(UnaryOp::Sign))?
);

struct NegBackward;

impl Backward for NegBackward {
    const NAME: &'static str = "NegBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(
            grads[0].as_ref().expect("invariant: materialised").neg()?
        )])
    }
}

struct PowBackward {
    exponent: f64,
    saved: SavedTensor,
}

impl Backward for PowBackward {
    const NAME: &'static str = "PowBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].as_ref().expect("invariant: materialised");
        let x = self.saved.get()?;
        let e = self.exponent;
        let d = if e == 0.0 {
            g.zeros_like()
        } else {
            g.mul(&x.pow(e - 1.0)?.mul_scalar(e)?)?
        };
        Ok(smallvec![Some(d)])
    }
    fn release(&self) {
        self.saved.release();
    }
}

impl Tensor {
    /// `-x` element-wise.
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(2.0f64).neg()?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn neg(&self) -> Result<Tensor> {
        let out = self.unary_kernel(UnaryOp::Neg);
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| NegBackward);
        }
        Ok(out)
    }

    /// `xᵉ` element-wise for a scalar exponent.
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// let y = x.pow(2.0)?;
    /// y.backward()?;
    /// assert_eq!((y.item::<f64>()?, x.grad().unwrap().item::<f64>()?), (9.0, 6.0));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn pow(&self, exponent: f64) -> Result<Tensor> {
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::pow_scalar(a, exponent),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| PowBackward {
                exponent,
                saved: SavedTensor::input(self),
            });
        }
        Ok(out)
    }
}
