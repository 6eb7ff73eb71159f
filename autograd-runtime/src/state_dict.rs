//! Named tensors and their files: what `state_dict()` returns and checkpoints hold, saved in the
//! safetensors format (the one `safetensors.torch.save_file` writes), under PyTorch's key names.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, View};

use crate::{DType, DataElement, Device, Error, Result, Tensor};

/// Tensors by name, in insertion order, plus string metadata: PyTorch's `state_dict()` (an
/// ordered dict of tensors) and a safetensors file's contents.
///
/// A module's [`state_dict`](crate::nn::Module::state_dict) holds its parameters under
/// PyTorch's names (`"0.weight"`); an optimizer's holds its per-parameter state as
/// `"state.{index}.{name}"` and its options as JSON in the metadata, `"param_groups"`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{StateDict, Tensor};
/// let mut dict = StateDict::new();
/// dict.insert("weight", Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?);
/// dict.set_metadata("epoch", "3");
/// let back = StateDict::from_bytes(&dict.to_bytes()?)?;
/// assert_eq!(back.get("weight").unwrap().to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
/// assert_eq!(back.metadata("epoch"), Some("3"));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct StateDict {
    entries: Vec<(String, Tensor)>,
    metadata: BTreeMap<String, String>,
}

impl StateDict {
    /// An empty dictionary.
    pub fn new() -> StateDict {
        StateDict::default()
    }

    /// Sets `key` to `tensor`, returning the tensor it held. A new key goes last; a key already
    /// present keeps its place.
    pub fn insert(&mut self, key: impl Into<String>, tensor: Tensor) -> Option<Tensor> {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => Some(std::mem::replace(slot, tensor)),
            None => {
                self.entries.push((key, tensor));
                None
            }
        }
    }

    /// The tensor under `key`.
    pub fn get(&self, key: &str) -> Option<&Tensor> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, t)| t)
    }

    /// Removes and returns the tensor under `key`.
    pub fn remove(&mut self, key: &str) -> Option<Tensor> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.entries.iter().map(|(k, t)| (k.as_str(), t))
    }

    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no tensor.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The metadata value under `key` (safetensors' `__metadata__`).
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(String::as_str)
    }

    /// All metadata, sorted by key.
    pub fn metadata_entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Sets a metadata value.
    pub fn set_metadata(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.metadata.insert(key.into(), value.into());
    }

    /// The entries whose keys start with `prefix` and a dot, with that part removed (the state of
    /// one child module: `"0"` of a `Sequential`'s dictionary); metadata keys likewise.
    ///
    /// ```
    /// use autograd_runtime::{StateDict, Tensor};
    /// let mut dict = StateDict::new();
    /// dict.insert("0.weight", Tensor::scalar(1.0f32));
    /// dict.insert("1.weight", Tensor::scalar(2.0f32));
    /// let first = dict.sub_dict("0");
    /// assert_eq!(first.keys().collect::<Vec<_>>(), ["weight"]);
    /// ```
    pub fn sub_dict(&self, prefix: &str) -> StateDict {
        let strip = |k: &str| Some(k.strip_prefix(prefix)?.strip_prefix('.')?.to_string());
        StateDict {
            entries: self
                .entries
                .iter()
                .filter_map(|(k, t)| Some((strip(k)?, t.clone())))
                .collect(),
            metadata: self
                .metadata
                .iter()
                .filter_map(|(k, v)| Some((strip(k)?, v.clone())))
                .collect(),
        }
    }

    /// Adds `other`'s entries and metadata under `prefix` and a dot (the inverse of
    /// [`sub_dict`](StateDict::sub_dict)); an empty prefix adds them as they are. A checkpoint
    /// of a model and its optimizer is two dictionaries under `"model"` and `"optimizer"`.
    pub fn extend_prefixed(&mut self, prefix: &str, other: StateDict) {
        let key = |k: String| {
            if prefix.is_empty() {
                k
            } else {
                format!("{prefix}.{k}")
            }
        };
        for (k, t) in other.entries {
            self.insert(key(k), t);
        }
        for (k, v) in other.metadata {
            self.metadata.insert(key(k), v);
        }
    }

    /// The dictionary in the safetensors format: f32 as `F32`, f64 as `F64`, each tensor's
    /// values copied to the host in row-major order, the metadata as `__metadata__`.
    ///
    /// # Errors
    ///
    /// A device error while copying a tensor to the host.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let host = self
            .entries
            .iter()
            .map(|(k, t)| Ok((k.clone(), HostTensor::of(t)?)))
            .collect::<Result<Vec<_>>>()?;
        let metadata = (!self.metadata.is_empty()).then(|| {
            self.metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<HashMap<_, _>>()
        });
        safetensors::serialize(host, metadata)
            .map_err(|e| Error::checkpoint("<memory>", format!("cannot serialize: {e}")))
    }

    /// Reads a dictionary from safetensors bytes, as CPU tensors in the file's order. `F32` and
    /// `F64` tensors are read as they are; `F16`, `BF16` and integer tensors are refused with an
    /// error naming them.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] for a truncated or malformed file or an unsupported dtype.
    pub fn from_bytes(bytes: &[u8]) -> Result<StateDict> {
        StateDict::parse(bytes, "<memory>")
    }

    /// Writes the dictionary to `path` as a safetensors file (see
    /// [`to_bytes`](StateDict::to_bytes)); PyTorch reads it with
    /// `safetensors.torch.load_file(path)`.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] naming the path when it cannot be written.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module};
    /// use autograd_runtime::StateDict;
    ///
    /// let path = std::env::temp_dir().join(format!("linear-{}.safetensors", std::process::id()));
    /// let layer = Linear::new(3, 2)?;
    /// layer.state_dict().save(&path)?;                  // PyTorch: safetensors.torch.load_file
    /// let mut other = Linear::new(3, 2)?;
    /// other.load_state_dict(&StateDict::load(&path)?)?;
    /// assert_eq!(other.weight().to_vec::<f32>()?, layer.weight().to_vec::<f32>()?);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        std::fs::write(path, bytes)
            .map_err(|e| Error::checkpoint(path.display().to_string(), e.to_string()))
    }

    /// Reads a safetensors file (one PyTorch wrote with `safetensors.torch.save_file`, or
    /// [`save`](StateDict::save)).
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] naming the path: missing, unreadable, truncated or malformed, or
    /// holding a dtype other than f32 and f64.
    pub fn load(path: impl AsRef<Path>) -> Result<StateDict> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes =
            std::fs::read(path).map_err(|e| Error::checkpoint(name.clone(), e.to_string()))?;
        StateDict::parse(&bytes, &name)
    }

    fn parse(bytes: &[u8], name: &str) -> Result<StateDict> {
        let bad = |message: String| Error::checkpoint(name.to_string(), message);
        let (_, header) = SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        // The header lists tensors by name; order them by where their data starts, which is the
        // order they were written in.
        let mut names: Vec<(usize, String)> = header
            .tensors()
            .into_iter()
            .map(|(k, info)| (info.data_offsets.0, k))
            .collect();
        names.sort();
        let mut dict = StateDict::new();
        for (_, key) in names {
            let view = file
                .tensor(&key)
                .map_err(|e| bad(format!("tensor \"{key}\": {e}")))?;
            let shape = view.shape().to_vec();
            let tensor = match view.dtype() {
                Dtype::F32 => from_le::<f32>(view.data(), &shape),
                Dtype::F64 => from_le::<f64>(view.data(), &shape),
                Dtype::F16 => from_le::<half::f16>(view.data(), &shape),
                Dtype::BF16 => from_le::<half::bf16>(view.data(), &shape),
                Dtype::I64 => from_le::<i64>(view.data(), &shape),
                Dtype::I32 => from_le::<i32>(view.data(), &shape),
                Dtype::U8 => from_le::<u8>(view.data(), &shape),
                Dtype::BOOL => from_le::<bool>(view.data(), &shape),
                other => {
                    return Err(bad(format!(
                        "tensor \"{key}\" has dtype {other}, which this crate has no tensors of \
                         (F32, F64, F16, BF16, I64, I32, U8 and BOOL load)"
                    )));
                }
            }?;
            dict.insert(key, tensor);
        }
        if let Some(metadata) = header.metadata() {
            dict.metadata = metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        Ok(dict)
    }
}

/// A dictionary of the pairs, in order (a repeated key keeps its first place and its last
/// tensor, as [`insert`](StateDict::insert)).
///
/// ```
/// use autograd_runtime::{StateDict, Tensor};
/// let dict: StateDict = [("weight", Tensor::scalar(1.0f32)), ("bias", Tensor::scalar(0.0f32))]
///     .into_iter()
///     .collect();
/// assert_eq!(dict.keys().collect::<Vec<_>>(), ["weight", "bias"]);
/// ```
impl<K: Into<String>> FromIterator<(K, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (K, Tensor)>>(iter: I) -> StateDict {
        let mut dict = StateDict::new();
        for (key, tensor) in iter {
            dict.insert(key, tensor);
        }
        dict
    }
}

/// A tensor's values on the host, little-endian, for the serializer.
struct HostTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl HostTensor {
    fn of(t: &Tensor) -> Result<HostTensor> {
        let host = if t.device() == Device::Cpu {
            t.clone()
        } else {
            t.to(Device::Cpu)?
        };
        let (dtype, bytes) = match host.dtype() {
            DType::F32 => (Dtype::F32, to_le(&host.to_vec::<f32>()?)),
            DType::F64 => (Dtype::F64, to_le(&host.to_vec::<f64>()?)),
            DType::F16 => (Dtype::F16, to_le(&host.to_vec::<half::f16>()?)),
            DType::BF16 => (Dtype::BF16, to_le(&host.to_vec::<half::bf16>()?)),
            DType::I64 => (Dtype::I64, to_le(&host.to_vec::<i64>()?)),
            DType::I32 => (Dtype::I32, to_le(&host.to_vec::<i32>()?)),
            DType::U8 => (Dtype::U8, to_le(&host.to_vec::<u8>()?)),
            DType::Bool => (Dtype::BOOL, to_le(&host.to_vec::<bool>()?)),
        };
        Ok(HostTensor {
            dtype,
            shape: t.shape().to_vec(),
            bytes,
        })
    }
}

impl View for HostTensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }

    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Values that cross the file as little-endian bytes.
trait LeBytes: DataElement {
    const SIZE: usize;
    fn write_le(self, out: &mut Vec<u8>);
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("invariant: chunks_exact(SIZE)"))
            }
        }
    )*};
}

le_bytes!(f32, f64, i64, i32, u8, half::f16, half::bf16);

/// safetensors' `BOOL` is one byte per element, 0 or 1.
impl LeBytes for bool {
    const SIZE: usize = 1;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

fn to_le<T: LeBytes>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    for &v in values {
        v.write_le(&mut out);
    }
    out
}

fn from_le<T: LeBytes>(bytes: &[u8], shape: &[usize]) -> Result<Tensor> {
    // `SafeTensors::deserialize` has checked that the byte length matches the shape and dtype.
    let values: Vec<T> = bytes.chunks_exact(T::SIZE).map(T::read_le).collect();
    Tensor::from_vec(values, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_values_order_and_metadata() {
        let mut dict = StateDict::new();
        dict.insert("b", Tensor::from_vec(vec![1.5f64, -2.0], &[2]).unwrap());
        dict.insert("a", Tensor::scalar(7.0f32));
        dict.set_metadata("format", "pt");
        let back = StateDict::from_bytes(&dict.to_bytes().unwrap()).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(back.get("b").unwrap().to_vec::<f64>().unwrap(), [1.5, -2.0]);
        assert_eq!(back.get("a").unwrap().shape(), &[] as &[usize]);
        assert_eq!(back.get("a").unwrap().item::<f32>().unwrap(), 7.0);
        assert_eq!(back.metadata("format"), Some("pt"));
    }

    #[test]
    fn a_non_contiguous_tensor_is_written_in_row_major_order() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let mut dict = StateDict::new();
        dict.insert("t", t);
        let back = StateDict::from_bytes(&dict.to_bytes().unwrap()).unwrap();
        let t = back.get("t").unwrap();
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }

    #[test]
    fn truncated_bytes_are_a_clear_error() {
        let mut dict = StateDict::new();
        dict.insert("w", Tensor::from_vec(vec![1.0f32; 16], &[4, 4]).unwrap());
        let bytes = dict.to_bytes().unwrap();
        let err = StateDict::from_bytes(&bytes[..bytes.len() - 5]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("checkpoint <memory>: not a safetensors file"),
            "{text}"
        );
        let err = StateDict::from_bytes(b"\x01\x02").unwrap_err();
        assert!(err.to_string().contains("not a safetensors file"), "{err}");
    }

    #[test]
    fn sub_dict_and_extend_prefixed_are_inverse() {
        let mut inner = StateDict::new();
        inner.insert("weight", Tensor::scalar(1.0f32));
        inner.set_metadata("param_groups", "[]");
        let mut outer = StateDict::new();
        outer.set_metadata("epoch", "3");
        outer.extend_prefixed("3", inner);
        assert_eq!(outer.keys().collect::<Vec<_>>(), ["3.weight"]);
        assert_eq!(outer.metadata("3.param_groups"), Some("[]"));
        let back = outer.sub_dict("3");
        assert_eq!(back.keys().collect::<Vec<_>>(), ["weight"]);
        assert_eq!(
            back.metadata_entries().collect::<Vec<_>>(),
            [("param_groups", "[]")]
        );
        assert!(outer.sub_dict("30").is_empty());
    }
}
