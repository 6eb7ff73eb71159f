//! `Sequential`: modules applied one after the other, named by position as PyTorch names them.

use std::ops::Index;

use crate::nn::Module;
use crate::{Result, Tensor};

/// Modules applied in order, each to the previous one's output (PyTorch's `nn.Sequential`).
/// Parameters are named `"{index}.{name}"` (`"0.weight"`, `"2.bias"`), counting the layers
/// without parameters too, so the state dict's keys are PyTorch's for the same architecture.
/// [`train`](Module::train) and [`eval`](Module::eval) reach every child.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Linear, Module, Relu, Sequential};
/// use autograd_runtime::{DType, Tensor};
/// let model = Sequential::new()
///     .add(Linear::new(4, 8)?)
///     .add(Relu)
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
    layers: Vec<Box<dyn Module>>,
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
    pub fn add<M: Module + 'static>(mut self, layer: M) -> Sequential {
        self.push(Box::new(layer));
        self
    }

    /// Appends a boxed layer (PyTorch's `append`). The layer keeps its own mode, as in PyTorch:
    /// call [`train`](Module::train) or [`eval`](Module::eval) on the container afterwards.
    pub fn push(&mut self, layer: Box<dyn Module>) {
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
    /// let model = Sequential::new().add(Linear::new(2, 2)?).add(Relu);
    /// assert_eq!(model.get(0).unwrap().parameters().len(), 2);
    /// assert!(model.get(2).is_none());
    /// assert!(model[1].parameters().is_empty());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.layers.get(index).map(|m| &**m)
    }

    /// The layer at `index`, mutably, if there is one.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut (dyn Module + 'static)> {
        self.layers.get_mut(index).map(|m| &mut **m)
    }

    /// The layers in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.layers.iter().map(|m| &**m)
    }
}

impl Index<usize> for Sequential {
    type Output = dyn Module;

    /// The layer at `index`.
    ///
    /// # Panics
    ///
    /// If `index >= len()`, as slices do.
    fn index(&self, index: usize) -> &(dyn Module + 'static) {
        &*self.layers[index]
    }
}

impl Module for Sequential {
    fn repr(&self) -> String {
        super::repr::container(
            "Sequential",
            self.layers
                .iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), &**l as &dyn Module)),
        )
    }

    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        Ok(x)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            for (name, p) in layer.named_parameters() {
                out.push((format!("{i}.{name}"), p));
            }
        }
        out
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.visit_parameters_mut(&mut |name, p| f(&format!("{i}.{name}"), p))?;
        }
        Ok(())
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        for layer in &mut self.layers {
            layer.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
