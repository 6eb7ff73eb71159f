//! Modules that hold modules without being layers: `Vec<M>` is PyTorch's `nn.ModuleList`
//! (children `"0"`, `"1"`, ..), and `Box<M>` (`Box<dyn Forward>`) is the module it boxes.

use super::derive_support as private;
use super::{Forward, Module};
use crate::{Result, Tensor};

/// PyTorch's `nn.ModuleList`: a field `layers: Vec<Block>` of a `#[derive(Module)]` struct names
/// its children `layers.0`, `layers.1`, .. and prints as PyTorch prints a `ModuleList`, with runs
/// of equal children folded (`(0-2): 3 x Linear(..)`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Linear, Module};
/// let list = vec![Linear::new(2, 2)?, Linear::new(2, 2)?, Linear::new(2, 1)?];
/// let names: Vec<String> = list.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]);
/// assert_eq!(
///     list.repr(),
///     "ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n  \
///      (2): Linear(in_features=2, out_features=1, bias=True)\n)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
impl<M: Module> Module for Vec<M> {
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
        self.iter()
            .enumerate()
            .map(|(i, m)| (i.to_string(), m as &dyn Module))
            .collect()
    }

    fn visit_children_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut dyn Module) -> Result<()>,
    ) -> Result<()> {
        for (i, m) in self.iter_mut().enumerate() {
            f(&i.to_string(), m)?;
        }
        Ok(())
    }

    fn set_training(&mut self, training: bool) {
        for m in self {
            m.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        private::children_training(self)
    }

    /// `ModuleList.__repr__`: runs of children with the same text folded into one line.
    fn repr(&self) -> String {
        if self.is_empty() {
            return "ModuleList()".into();
        }
        let mut runs: Vec<(usize, usize, String)> = Vec::new();
        for (i, m) in self.iter().enumerate() {
            let text = m.repr();
            match runs.last_mut() {
                Some((_, end, last)) if *last == text => *end = i,
                _ => runs.push((i, i, text)),
            }
        }
        let lines: Vec<String> = runs
            .into_iter()
            .map(|(start, end, text)| {
                let line = if start == end {
                    format!("({start}): {text}")
                } else {
                    format!("({start}-{end}): {} x {text}", end - start + 1)
                };
                super::repr::add_indent(&line)
            })
            .collect();
        format!("ModuleList(\n  {}\n)", lines.join("\n  "))
    }
}

/// A boxed module is the module (`Box<dyn Forward>` in [`Sequential`](super::Sequential), or a
/// field of a `#[derive(Module)]` struct).
impl<M: Module + ?Sized> Module for Box<M> {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        (**self).named_parameters()
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        (**self).visit_parameters_mut(f)
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        (**self).named_buffers()
    }

    fn visit_buffers_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        (**self).visit_buffers_mut(f)
    }

    fn non_persistent_buffers(&self) -> Vec<String> {
        (**self).non_persistent_buffers()
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        (**self).named_children()
    }

    fn visit_children_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut dyn Module) -> Result<()>,
    ) -> Result<()> {
        (**self).visit_children_mut(f)
    }

    fn set_training(&mut self, training: bool) {
        (**self).set_training(training);
    }

    fn is_training(&self) -> bool {
        (**self).is_training()
    }

    fn repr(&self) -> String {
        (**self).repr()
    }
}

/// A boxed single-input module computes as the module.
impl<M: Forward + ?Sized> Forward for Box<M> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        (**self).forward(input)
    }
}
