//! A module's state: the entries of its `state_dict` in PyTorch's order, loading one (strict or
//! not, PyTorch's missing and unexpected keys), and the conversions of `to`/`to_dtype`.

use std::collections::HashSet;
use std::fmt;

use super::Module;
use crate::{Error, Result, StateDict, Tensor, no_grad};

/// What [`Module::load_state_dict_with`] found that did not match (PyTorch's
/// `_IncompatibleKeys`): the module's keys absent from the dictionary, and the dictionary's keys
/// the module does not have, each in PyTorch's order.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{IncompatibleKeys, Linear, Module};
/// let mut layer = Linear::new(2, 2)?;
/// let dict = layer.state_dict();
/// let keys = layer.load_state_dict_with(&dict, false)?;
/// assert_eq!(keys, IncompatibleKeys::default());
/// assert_eq!(keys.to_string(), "<All keys matched successfully>");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// Keys of the module (parameters and persistent buffers) that the dictionary lacks.
    pub missing_keys: Vec<String>,
    /// Keys of the dictionary that name nothing in the module.
    pub unexpected_keys: Vec<String>,
}

impl IncompatibleKeys {
    /// Whether every key matched.
    pub fn is_empty(&self) -> bool {
        self.missing_keys.is_empty() && self.unexpected_keys.is_empty()
    }
}

impl fmt::Display for IncompatibleKeys {
    /// PyTorch's repr: `<All keys matched successfully>`, or
    /// `_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("<All keys matched successfully>");
        }
        let list = |keys: &[String]| {
            let quoted: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
            format!("[{}]", quoted.join(", "))
        };
        write!(
            f,
            "_IncompatibleKeys(missing_keys={}, unexpected_keys={})",
            list(&self.missing_keys),
            list(&self.unexpected_keys)
        )
    }
}

/// `prefix.name`, or `name` under the root (`""`).
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The first segment of a relative name: `fc1` of `fc1.weight`, with whether there is more.
fn head(name: &str) -> (&str, bool) {
    match name.split_once('.') {
        Some((first, _)) => (first, true),
        None => (name, false),
    }
}

/// A module's own state, in PyTorch's order: its parameters, then its persistent buffers,
/// without those of its children (whose names start with a child's name and a dot).
fn own_state(module: &dyn Module) -> Vec<(String, Tensor)> {
    let children: HashSet<String> = module
        .named_children()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let own = |name: &str| {
        let (first, nested) = head(name);
        !(nested && children.contains(first))
    };
    let non_persistent: HashSet<String> = module.non_persistent_buffers().into_iter().collect();
    let mut out: Vec<(String, Tensor)> = module
        .named_parameters()
        .into_iter()
        .filter(|(n, _)| own(n))
        .collect();
    out.extend(
        module
            .named_buffers()
            .into_iter()
            .filter(|(n, _)| own(n) && !non_persistent.contains(n)),
    );
    out
}

/// Every entry of the module's `state_dict`, in PyTorch's order: for each module in pre-order,
/// its own parameters, then its own persistent buffers.
pub(crate) fn entries(module: &dyn Module) -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    for (prefix, m) in module.named_modules() {
        for (name, t) in own_state(m) {
            out.push((join(&prefix, &name), t));
        }
    }
    out
}

/// The missing and unexpected keys of `dict` against `module`, in the order PyTorch's
/// `_load_from_state_dict` finds them (module by module in pre-order; the dictionary's keys in
/// its order within each module), with the module's entries.
fn compare(module: &dyn Module, dict: &StateDict) -> (IncompatibleKeys, Vec<(String, Tensor)>) {
    let mut keys = IncompatibleKeys::default();
    let mut all = Vec::new();
    for (prefix, m) in module.named_modules() {
        let own = own_state(m);
        let children: HashSet<String> = m.named_children().into_iter().map(|(n, _)| n).collect();
        let local: HashSet<&str> = own.iter().map(|(n, _)| n.as_str()).collect();
        for key in dict.keys() {
            let rest = if prefix.is_empty() {
                key
            } else {
                match key
                    .strip_prefix(prefix.as_str())
                    .and_then(|r| r.strip_prefix('.'))
                {
                    Some(rest) => rest,
                    None => continue,
                }
            };
            let (first, nested) = head(rest);
            let known = if nested {
                children.contains(first)
            } else {
                local.contains(rest)
            };
            if !known {
                keys.unexpected_keys.push(key.to_owned());
            }
        }
        for (name, t) in own {
            let full = join(&prefix, &name);
            if !dict.contains_key(&full) {
                keys.missing_keys.push(full.clone());
            }
            all.push((full, t));
        }
    }
    (keys, all)
}

/// PyTorch's `load_state_dict(dict, strict)`, all checks before any copy.
pub(crate) fn load(
    module: &mut dyn Module,
    dict: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys> {
    let (keys, entries) = compare(module, dict);
    let mut problems = Vec::new();
    if strict {
        let quoted = |keys: &[String]| {
            let q: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
            q.join(", ")
        };
        if !keys.missing_keys.is_empty() {
            problems.push(format!(
                "Missing key(s) in state_dict: {}. ",
                quoted(&keys.missing_keys)
            ));
        }
        if !keys.unexpected_keys.is_empty() {
            problems.push(format!(
                "Unexpected key(s) in state_dict: {}. ",
                quoted(&keys.unexpected_keys)
            ));
        }
    }
    for (name, t) in &entries {
        if let Some(value) = dict.get(name)
            && value.shape() != t.shape()
        {
            problems.push(format!(
                "size mismatch for {name}: copying a param with shape {} from checkpoint, \
                 the shape in current model is {}.",
                torch_size(value.shape()),
                torch_size(t.shape())
            ));
        }
    }
    if !problems.is_empty() {
        return Err(Error::StateDict {
            module: module_name(module),
            message: problems.join("\n\t"),
        });
    }
    let _no_grad = no_grad();
    for (name, t) in &entries {
        if let Some(value) = dict.get(name) {
            t.copy_(&value.to_dtype(t.dtype())?.to(t.device())?)?;
        }
    }
    Ok(keys)
}

/// Replaces every parameter and buffer `f` converts (`Some`) by its conversion, a parameter
/// keeping its `requires_grad`; a tensor held twice (tied weights) is converted once and both
/// places get the same new tensor.
pub(crate) fn convert(
    module: &mut dyn Module,
    f: &mut dyn FnMut(&Tensor) -> Result<Option<Tensor>>,
) -> Result<()> {
    let mut done: Vec<(Tensor, Tensor)> = Vec::new();
    let mut replace = |t: &mut Tensor, parameter: bool| -> Result<()> {
        if let Some((_, new)) = done.iter().find(|(old, _)| old.is_same(t)) {
            *t = new.clone();
            return Ok(());
        }
        let Some(converted) = f(&t.detach())? else {
            return Ok(());
        };
        let new = if parameter {
            converted.requires_grad_(t.requires_grad())?
        } else {
            converted
        };
        done.push((t.clone(), new.clone()));
        *t = new;
        Ok(())
    };
    module.visit_parameters_mut(&mut |_, p| replace(p, true))?;
    module.visit_buffers_mut(&mut |_, b| replace(b, false))
}

/// PyTorch's spelling of a shape in messages: `torch.Size([3, 4])`.
pub(crate) fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// The module's class name as PyTorch prints it (`Linear`, `Sequential`): its repr up to the
/// first parenthesis.
pub(crate) fn module_name(module: &dyn Module) -> String {
    let repr = module.repr();
    repr.split('(').next().unwrap_or("Module").to_owned()
}
