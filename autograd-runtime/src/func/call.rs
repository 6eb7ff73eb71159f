//! [`functional_call`]: a module run with other tensors in place of its parameters and buffers.

use std::collections::HashMap;

use crate::nn::Module;
use crate::nn::state::{join, module_name};
use crate::{Error, Result, StateDict, Tensor};

/// Options of [`functional_call_with`]: PyTorch's keyword arguments `tie_weights=True,
/// strict=False`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::{functional_call_with, FunctionalCallOptions};
/// use autograd_runtime::nn::{Forward, Linear};
/// use autograd_runtime::{StateDict, Tensor};
/// let mut layer = Linear::new(2, 1)?;
/// let mut dict = StateDict::new();
/// dict.insert("bias", Tensor::zeros(&[1], autograd_runtime::DType::F32)?);
/// let x = Tensor::ones(&[1, 2], autograd_runtime::DType::F32)?;
/// let strict = FunctionalCallOptions::new().strict(true);
/// let err = functional_call_with(&mut layer, &dict, strict, |m| m.forward(&x)).unwrap_err();
/// assert_eq!(err.to_string(), "Error(s) in reparametrizing for Linear:\n\tMissing key(s): 'weight'.");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct FunctionalCallOptions {
    tie_weights: bool,
    strict: bool,
}

impl Default for FunctionalCallOptions {
    fn default() -> Self {
        Self {
            tie_weights: true,
            strict: false,
        }
    }
}

impl FunctionalCallOptions {
    /// PyTorch's defaults: `tie_weights=True`, `strict=False`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tensor the module holds under several names (tied weights) is replaced under all of
    /// them when the dictionary names one (default `true`); two different values for one
    /// such tensor are then an error.
    pub fn tie_weights(mut self, tie_weights: bool) -> Self {
        self.tie_weights = tie_weights;
        self
    }

    /// The dictionary must name every parameter and buffer, and nothing else (default `false`:
    /// the module's own tensors stand in for names it lacks, and a name the module's structure
    /// has no place for is ignored, as PyTorch sets it as a plain attribute).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// Runs `call` on `module` with the tensors of `parameters_and_buffers` in place of its
/// parameters and buffers of the same names (`torch.func.functional_call`), then puts the
/// module's own tensors back, also when `call` fails or panics.
///
/// `call` is PyTorch's `args`: it receives the module and calls its forward (`|m|
/// m.forward(&x)`), since a module's forward has no single signature here. The given tensors
/// are used as they are (not copied, not made parameters), so gradients flow to them: with
/// [`grad`](super::grad) this differentiates a model with respect to parameters passed as
/// arguments. Names are PyTorch's ([`named_parameters`](Module::named_parameters),
/// `"0.weight"`); names the dictionary lacks keep the module's tensors.
///
/// # Errors
///
/// PyTorch's for a name whose path does not exist: "Linear has no attribute `fc`", "submodule
/// `weight`: Parameter containing: ... is not an instance of torch.nn.Module"; with
/// [`tie_weights`](FunctionalCallOptions::tie_weights), "functional_call got multiple values for
/// keys ['a', 'b'], which are tied. Consider using tie_weights=False"; with
/// [`strict`](FunctionalCallOptions::strict), "Error(s) in reparametrizing for Linear:\n\t
/// Unexpected key(s): 'foo'." and "... Missing key(s): 'weight'."; and any error of `call`.
/// Nothing is swapped when the names are wrong.
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::{self, functional_call};
/// use autograd_runtime::nn::{Forward, Linear, Module};
/// use autograd_runtime::{DType, StateDict, Tensor};
///
/// let mut layer = Linear::new(2, 1)?;
/// layer.to_dtype(DType::F64)?;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
/// let names = ["weight", "bias"];
/// let params = [
///     Tensor::from_vec(vec![3.0f64, 4.0], &[1, 2])?,
///     Tensor::from_vec(vec![0.5f64], &[1])?,
/// ];
/// // the loss as a function of the parameters, and its gradient with respect to them
/// let loss = |p: &[Tensor]| {
///     let dict: StateDict = names.iter().copied().zip(p.iter().cloned()).collect();
///     functional_call(&mut layer, &dict, |m| m.forward(&x))?.sum()
/// };
/// let [g_weight, g_bias] = func::grad(loss, [0, 1])(&params)?;
/// assert_eq!(g_weight.to_vec::<f64>()?, [1.0, 2.0]); // x
/// assert_eq!(g_bias.to_vec::<f64>()?, [1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn functional_call<M, T>(
    module: &mut M,
    parameters_and_buffers: &StateDict,
    call: impl FnOnce(&M) -> Result<T>,
) -> Result<T>
where
    M: Module + ?Sized,
{
    functional_call_with(
        module,
        parameters_and_buffers,
        FunctionalCallOptions::new(),
        call,
    )
}

/// [`functional_call`] with PyTorch's `tie_weights` and `strict` ([`FunctionalCallOptions`]).
///
/// # Errors
///
/// As [`functional_call`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::{functional_call_with, FunctionalCallOptions};
/// use autograd_runtime::nn::{Forward, Linear, Module};
/// use autograd_runtime::{DType, StateDict, Tensor};
/// let mut layer = Linear::new(2, 1)?;
/// let mut dict = layer.state_dict();
/// dict.insert("bias", Tensor::from_vec(vec![10.0f32], &[1])?);
/// let x = Tensor::zeros(&[1, 2], DType::F32)?;
/// let strict = FunctionalCallOptions::new().strict(true);
/// let y = functional_call_with(&mut layer, &dict, strict, |m| m.forward(&x))?;
/// assert_eq!(y.to_vec::<f32>()?, [10.0]);
/// assert_ne!(layer.bias().unwrap().to_vec::<f32>()?, [10.0]); // the module's own is back
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn functional_call_with<M, T>(
    module: &mut M,
    parameters_and_buffers: &StateDict,
    options: FunctionalCallOptions,
    call: impl FnOnce(&M) -> Result<T>,
) -> Result<T>
where
    M: Module + ?Sized,
{
    let originals = swap_in(module.as_module_mut(), parameters_and_buffers, options)?;
    let guard = Restore { module, originals };
    call(&*guard.module)
}

/// Puts a module's own tensors back when dropped.
struct Restore<'a, M: Module + ?Sized> {
    module: &'a mut M,
    originals: Originals,
}

impl<M: Module + ?Sized> Drop for Restore<'_, M> {
    fn drop(&mut self) {
        let originals = std::mem::take(&mut self.originals);
        // Visiting only assigns tensors: it cannot fail.
        let _ = swap(self.module.as_module_mut(), &originals);
    }
}

/// Tensors by full name, parameters and buffers apart (a name may be both only in name).
#[derive(Default)]
struct Originals {
    parameters: HashMap<String, Tensor>,
    buffers: HashMap<String, Tensor>,
}

/// Replaces the tensors named in `with`, returning the ones replaced.
fn swap(module: &mut dyn Module, with: &Originals) -> Result<Originals> {
    let mut old = Originals::default();
    module.visit_parameters_mut(&mut |name, t| {
        replace_named(&with.parameters, &mut old.parameters, name, t)
    })?;
    module.visit_buffers_mut(&mut |name, t| {
        replace_named(&with.buffers, &mut old.buffers, name, t)
    })?;
    Ok(old)
}

/// `t` becomes `with[name]` where `with` names it, the tensor it replaces kept in `old`.
fn replace_named(
    with: &HashMap<String, Tensor>,
    old: &mut HashMap<String, Tensor>,
    name: &str,
    t: &mut Tensor,
) -> Result<()> {
    if let Some(new) = with.get(name) {
        old.insert(name.to_owned(), std::mem::replace(t, new.clone()));
    }
    Ok(())
}

/// PyTorch's `_reparametrize_module`: the names checked (and untied), then the tensors swapped
/// in; the originals returned.
fn swap_in(
    module: &mut dyn Module,
    dict: &StateDict,
    options: FunctionalCallOptions,
) -> Result<Originals> {
    // Every place, a tensor held twice at each of its names (`named_parameters(remove_duplicate=False)`).
    let mut places: Vec<(String, Tensor, bool)> = Vec::new();
    module.visit_parameters_mut(&mut |name, t| {
        places.push((name.to_owned(), t.clone(), true));
        Ok(())
    })?;
    module.visit_buffers_mut(&mut |name, t| {
        places.push((name.to_owned(), t.clone(), false));
        Ok(())
    })?;
    let mut values: Vec<(String, Tensor)> = dict
        .iter()
        .map(|(k, t)| (k.to_owned(), t.clone()))
        .collect();
    if options.tie_weights {
        untie(&places, &mut values)?;
    }
    if options.strict {
        check_keys(&*module, &places, &values)?;
    }
    let mut with = Originals::default();
    for (name, value) in values {
        match places.iter().find(|(n, _, _)| *n == name) {
            Some((_, _, true)) => drop(with.parameters.insert(name, value)),
            Some((_, _, false)) => drop(with.buffers.insert(name, value)),
            None => check_path(&*module, &name)?,
        }
    }
    swap(module, &with)
}

/// `_untie_named_tensors_map`: a name given for a tensor held under several names gives it
/// under all of them.
fn untie(places: &[(String, Tensor, bool)], values: &mut Vec<(String, Tensor)>) -> Result<()> {
    let given: Vec<(String, Tensor)> = values.clone();
    for (name, value) in &given {
        let Some((_, tensor, _)) = places.iter().find(|(n, _, _)| n == name) else {
            continue;
        };
        let mut tied: Vec<&str> = places
            .iter()
            .filter(|(_, t, _)| t.is_same(tensor))
            .map(|(n, _, _)| n.as_str())
            .collect();
        if tied.len() < 2 {
            continue;
        }
        let conflict = given
            .iter()
            .any(|(n, v)| tied.contains(&n.as_str()) && !v.is_same(value));
        if conflict {
            tied.sort_unstable();
            let quoted: Vec<String> = tied.iter().map(|n| format!("'{n}'")).collect();
            return Err(Error::msg(format!(
                "functional_call got multiple values for keys [{}], which are tied. Consider \
                 using tie_weights=False",
                quoted.join(", ")
            )));
        }
        for n in tied {
            if !values.iter().any(|(k, _)| k == n) {
                values.push((n.to_owned(), value.clone()));
            }
        }
    }
    Ok(())
}

/// `strict=True`: every place named, nothing else.
fn check_keys(
    module: &dyn Module,
    places: &[(String, Tensor, bool)],
    values: &[(String, Tensor)],
) -> Result<()> {
    let quoted = |mut keys: Vec<&str>| {
        keys.sort_unstable();
        keys.dedup();
        let q: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
        q.join(", ")
    };
    let unexpected: Vec<&str> = values
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !places.iter().any(|(n, _, _)| n == k))
        .collect();
    let missing: Vec<&str> = places
        .iter()
        .map(|(n, _, _)| n.as_str())
        .filter(|n| !values.iter().any(|(k, _)| k == n))
        .collect();
    let mut messages = Vec::new();
    if !unexpected.is_empty() {
        messages.push(format!("Unexpected key(s): {}.", quoted(unexpected)));
    }
    if !missing.is_empty() {
        messages.push(format!("Missing key(s): {}.", quoted(missing)));
    }
    if messages.is_empty() {
        return Ok(());
    }
    Err(Error::msg(format!(
        "Error(s) in reparametrizing for {}:\n\t{}",
        module_name(module),
        messages.join("\n\t")
    )))
}

/// A name that is no parameter or buffer: its path must lead through submodules
/// (`NamedMemberAccessor.get_submodule`'s errors); its last part is then a plain attribute
/// PyTorch would set, which nothing here reads.
fn check_path(module: &dyn Module, name: &str) -> Result<()> {
    let Some((prefix, _attr)) = name.rsplit_once('.') else {
        return Ok(());
    };
    let mut current = module;
    let mut path = String::new();
    for segment in prefix.split('.') {
        path = join(&path, segment);
        if let Some((_, child)) = current
            .named_children()
            .into_iter()
            .find(|(n, _)| n == segment)
        {
            current = child;
            continue;
        }
        let own = current
            .named_parameters()
            .into_iter()
            .map(|p| (p, true))
            .chain(current.named_buffers().into_iter().map(|b| (b, false)))
            .find(|((n, _), _)| n == segment);
        return Err(Error::msg(match own {
            Some(((_, t), is_parameter)) => format!(
                "submodule `{path}`: {}{t} is not an instance of torch.nn.Module",
                if is_parameter {
                    "Parameter containing:\n"
                } else {
                    ""
                }
            ),
            None => format!("{} has no attribute `{segment}`", module_name(current)),
        }));
    }
    Ok(())
}
