//! `Sequential`: modules applied one after the other, named by position as PyTorch names them.

use std::fmt;
use std::ops::Index;

use super::derive_support as private;
use crate::nn::{Forward, Module};
use crate::{Result, Tensor};

/// Modules applied in order, each to the previous one's output (PyTorch's `nn.Sequential`).
/// Parameters are named `"{index}.{name}"` (`"0.weight"`, `"2.bias"`), counting the layers
/// without parameters too, so the state dict's keys are PyTorch's for the same architecture.
/// [`train`](Module::train) and [`eval`](Module::eval) reach every child.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear, Module, Relu, Sequential};
/// use autograd_runtime::{DType, Tensor};
/// let model = Sequential::new()
///     .add(Linear::new(4, 8)?)
///     .add(Relu::new())
///     .add(Linear::new(8, 2)?);
/// let y = model.forward(&Tensor::ones(&[3, 4], DType::F32)?)?;
/// assert_eq!(y.shape(), &[3, 2]);
/// let dict = model.state_dict();
/// let keys: Vec<&str> = dict.keys().collect();
/// assert_eq!(keys, ["0.weight", "0.bias", "2.weight", "2.bias"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Sequential {
    /// The layers, in the order `forward` applies them.
    layers: Vec<Box<dyn Forward>>,
    /// The container's own mode, set with its children's by `set_training`.
    training: bool,
}

impl Default for Sequential {
    fn default() -> Sequential {
        Sequential::new()
    }
}

impl Sequential {
    /// An empty container (whose `forward` returns its input).
    pub fn new() -> Sequential {
        Sequential {
            layers: Vec::new(),
            training: true,
        }
    }

    /// Appends `layer` (builder style).
    #[expect(
        clippy::should_implement_trait,
        reason = "a builder method, as candle-nn's `seq().add(..)`; `Sequential + layer` would read oddly"
    )]
    pub fn add<M: Forward + 'static>(mut self, layer: M) -> Sequential {
        self.push(Box::new(layer));
        self
    }

    /// Appends a boxed layer (PyTorch's `append`). The layer keeps its own mode, as in PyTorch:
    /// call [`train`](Module::train) or [`eval`](Module::eval) on the container afterwards.
    pub fn push(&mut self, layer: Box<dyn Forward>) {
        self.layers.push(layer);
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there is no layer.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layer at `index`, if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module, Relu, Sequential};
    /// let model = Sequential::new().add(Linear::new(2, 2)?).add(Relu::new());
    /// assert_eq!(model.get(0).unwrap().parameters().len(), 2);
    /// assert!(model.get(2).is_none());
    /// assert!(model[1].parameters().is_empty());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn get(&self, index: usize) -> Option<&dyn Forward> {
        self.layers.get(index).map(|m| &**m)
    }

    /// The layer at `index`, mutably, if there is one.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut (dyn Forward + 'static)> {
        self.layers.get_mut(index).map(|m| &mut **m)
    }

    /// The layers in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Forward> {
        self.layers.iter().map(|m| &**m)
    }
}

impl Index<usize> for Sequential {
    type Output = dyn Forward;

    /// The layer at `index`.
    ///
    /// # Panics
    ///
    /// If `index >= len()`, as slices do.
    fn index(&self, index: usize) -> &(dyn Forward + 'static) {
        &*self.layers[index]
    }
}

/// PyTorch's `Sequential`: the children are the layers, named by position.
impl Module for Sequential {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        private::named([], self, |m| m.named_parameters())
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        private::visit_children_parameters(self, f)
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        private::named([], self, |m| m.named_buffers())
    }

    fn visit_buffers_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        private::visit_children_buffers(self, f)
    }

    fn non_persistent_buffers(&self) -> Vec<String> {
        private::non_persistent(&[], self)
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        self.layers
            .iter()
            .enumerate()
            .map(|(i, l)| (i.to_string(), &**l as &dyn Module))
            .collect()
    }

    fn visit_children_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut dyn Module) -> Result<()>,
    ) -> Result<()> {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            f(&i.to_string(), &mut **layer)?;
        }
        Ok(())
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        private::set_children_training(self, training);
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn repr(&self) -> String {
        private::repr("Sequential", None, self)
    }
}

impl Forward for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        Ok(x)
    }
}

impl fmt::Display for Sequential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}
