//! Operator overloads: panicking sugar over the fallible methods, for `Tensor` and `&Tensor` on
//! either side and a float or integer literal on either side (`&a + &b`, `&a * 2.0`,
//! `&labels * 2`, `1.0 - &a`, `-&a`), promoted as PyTorch promotes Python numbers.
//!
//! The scalar impls are for `f64` and `i32` only, the types an unsuffixed literal defaults to:
//! one impl per literal kind keeps `(&a * 2.0).sum()` inferable. Other scalar types go through
//! the methods, which take any Rust number (`a.mul_scalar(0.5f32)`, `a.add_scalar(1u8)`).
//!
//! # Panics
//!
//! Every operator panics where its method would return an error (incompatible shapes, dtypes or
//! devices), with the same message. Use the methods (`a.add(&b)?`) to handle errors.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::{Scalar, Tensor};

fn ok(r: crate::Result<Tensor>) -> Tensor {
    r.unwrap_or_else(|e| panic!("{e}"))
}

macro_rules! tensor_binop {
    (@scalars $trait:ident, $method:ident, $scalar_fn:ident, $rscalar:expr; $($s:ty),*) => {$(
        impl $trait<$s> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $s) -> Tensor {
                ok(Tensor::$scalar_fn(&self, rhs))
            }
        }
        impl $trait<$s> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $s) -> Tensor {
                ok(Tensor::$scalar_fn(&self, rhs))
            }
        }
        impl $trait<&Tensor> for $s {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                let f: fn(&Tensor, Scalar) -> crate::Result<Tensor> = $rscalar;
                ok(f(rhs, self.into()))
            }
        }
        impl $trait<Tensor> for $s {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                let f: fn(&Tensor, Scalar) -> crate::Result<Tensor> = $rscalar;
                ok(f(&rhs, self.into()))
            }
        }
    )*};
    ($trait:ident, $method:ident, $tensor_fn:ident, $scalar_fn:ident, $rscalar:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, rhs))
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, &rhs))
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, rhs))
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, &rhs))
            }
        }
        tensor_binop!(@scalars $trait, $method, $scalar_fn, $rscalar; f64, i32);
    };
}

tensor_binop!(Add, add, add, add_scalar, |t, s| t.add_scalar(s));
tensor_binop!(Sub, sub, sub, sub_scalar, |t, s| t.rsub_scalar(s));
tensor_binop!(Mul, mul, mul, mul_scalar, |t, s| t.mul_scalar(s));
tensor_binop!(Div, div, div, div_scalar, |t, s| t.rdiv_scalar(s));

impl Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        ok(Tensor::neg(self))
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        ok(Tensor::neg(&self))
    }
}

#[cfg(test)]
mod tests {
    use crate::Tensor;

    #[test]
    fn operators_match_methods() {
        let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).expect("valid");
        let b = Tensor::from_vec(vec![4.0f64, 8.0], &[2]).expect("valid");
        assert_eq!((&a + &b).to_vec::<f64>().expect("f64"), vec![5.0, 10.0]);
        assert_eq!((&b / 2.0).to_vec::<f64>().expect("f64"), vec![2.0, 4.0]);
        assert_eq!((1.0 - &a).to_vec::<f64>().expect("f64"), vec![0.0, -1.0]);
        assert_eq!((8.0 / &b).to_vec::<f64>().expect("f64"), vec![2.0, 1.0]);
        assert_eq!((-&a).to_vec::<f64>().expect("f64"), vec![-1.0, -2.0]);
    }

    #[test]
    #[should_panic(
        expected = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    )]
    fn operator_panics_with_the_method_error() {
        let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).expect("valid");
        let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).expect("valid");
        let _ = &a + &b;
    }
}
