//! [`Collate`]: the default collate step (PyTorch's `default_collate`), from the samples of a
//! batch to the batch.

use crate::{Error, Result, Tensor};

/// How a [`DataLoader`](super::DataLoader) without a `collate_fn` turns a batch's samples into
/// one batch (PyTorch's `default_collate`): tensors are stacked along a new dim 0, numbers
/// become a 1-D tensor (`i64` → `I64`, `f64` → `F64`, as PyTorch's Python ints and floats;
/// `f32` → `F32`, `bool` → `Bool`), and a `Vec` or a tuple is collated field by field.
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::Collate;
/// use autograd_runtime::{DType, Tensor};
/// let samples = vec![
///     (Tensor::zeros(&[2, 3], DType::F32)?, 7i64),
///     (Tensor::ones(&[2, 3], DType::F32)?, 9i64),
/// ];
/// let (x, y) = Collate::collate(samples)?;
/// assert_eq!((x.shape(), x.dtype()), (&[2, 2, 3][..], DType::F32));
/// assert_eq!((y.dtype(), y.to_vec::<i64>()?), (DType::I64, vec![7, 9]));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Collate: Sized {
    /// The collated batch.
    type Batch;

    /// Collates the samples of one batch (never empty when the loader calls it).
    ///
    /// # Errors
    ///
    /// Tensors of different shapes or dtypes (as [`Tensor::stack`]), `Vec`s of different
    /// lengths ("each element in list of batch should be of equal size", PyTorch's words).
    fn collate(items: Vec<Self>) -> Result<Self::Batch>;
}

impl Collate for Tensor {
    type Batch = Tensor;

    fn collate(items: Vec<Tensor>) -> Result<Tensor> {
        Tensor::stack(&items, 0)
    }
}

/// Numbers become a 1-D tensor of their dtype.
macro_rules! collate_numbers {
    ($($t:ty),*) => {$(
        impl Collate for $t {
            type Batch = Tensor;

            fn collate(items: Vec<$t>) -> Result<Tensor> {
                let n = items.len();
                Tensor::from_vec(items, &[n])
            }
        }
    )*};
}

collate_numbers!(i64, f64, f32, bool);

impl<T: Collate> Collate for Vec<T> {
    type Batch = Vec<T::Batch>;

    fn collate(items: Vec<Vec<T>>) -> Result<Vec<T::Batch>> {
        let fields = items.first().map_or(0, Vec::len);
        if items.iter().any(|s| s.len() != fields) {
            return Err(Error::size_mismatch(
                "default_collate",
                "each element in list of batch should be of equal size",
            ));
        }
        let mut columns: Vec<Vec<T>> = (0..fields)
            .map(|_| Vec::with_capacity(items.len()))
            .collect();
        for sample in items {
            for (column, field) in columns.iter_mut().zip(sample) {
                column.push(field);
            }
        }
        columns.into_iter().map(T::collate).collect()
    }
}

/// Tuples are collated field by field.
macro_rules! collate_tuple {
    ($($name:ident $column:ident),+) => {
        impl<$($name: Collate),+> Collate for ($($name,)+) {
            type Batch = ($($name::Batch,)+);

            fn collate(items: Vec<($($name,)+)>) -> Result<Self::Batch> {
                $(let mut $column = Vec::with_capacity(items.len());)+
                #[expect(non_snake_case, reason = "the fields are named after their types")]
                for ($($name,)+) in items {
                    $($column.push($name);)+
                }
                Ok(($($name::collate($column)?,)+))
            }
        }
    };
}

collate_tuple!(A a);
collate_tuple!(A a, B b);
collate_tuple!(A a, B b, C c);
collate_tuple!(A a, B b, C c, D d);
collate_tuple!(A a, B b, C c, D d, E e);
