//! An optimizer's state dict in PyTorch's layout: `state.{index}.{name}` tensors (parameters
//! numbered across groups, in order) and the `param_groups` JSON in the metadata.

use serde_json::{Map, Value};

use super::base::{Algorithm, Core};
use super::{AnyParamGroup, GroupOptions};
use crate::{Error, Result, StateDict, Tensor};

/// The metadata key of the groups' options.
pub(crate) const PARAM_GROUPS: &str = "param_groups";

impl<A: Algorithm> Core<A> {
    /// See [`Optimizer::state_dict`](super::Optimizer::state_dict).
    pub(crate) fn state_dict(&self) -> Result<StateDict> {
        let mut dict = StateDict::new();
        let mut groups = Vec::with_capacity(self.groups.len());
        let mut index = 0usize;
        for (group, states) in self.groups.iter().zip(&self.state) {
            let mut ids = Vec::with_capacity(states.len());
            for s in states {
                if let Some(s) = s {
                    for (name, t) in A::save_state(s) {
                        dict.insert(format!("state.{index}.{name}"), t.detach());
                    }
                }
                ids.push(Value::from(index));
                index += 1;
            }
            let mut map = group.options_json();
            map.insert("params".into(), Value::Array(ids));
            groups.push(Value::Object(map));
        }
        dict.set_metadata(PARAM_GROUPS, Value::Array(groups).to_string());
        Ok(dict)
    }

    /// See [`Optimizer::load_state_dict`](super::Optimizer::load_state_dict); `name` is the
    /// optimizer's type name, for the error.
    pub(crate) fn load_state_dict(&mut self, dict: &StateDict, name: &str) -> Result<()> {
        let err = |message: String| Error::StateDict {
            module: name.to_string(),
            message,
        };
        let (options, initial_lrs) = self.read_groups(dict).map_err(err)?;
        // Every parameter's state, read before anything changes.
        let mut problems = Vec::new();
        let mut new_state = Vec::with_capacity(self.groups.len());
        let mut index = 0usize;
        for (group, o) in self.groups.iter().zip(&options) {
            let mut states = Vec::with_capacity(group.params.len());
            for p in &group.params {
                let prefix = format!("state.{index}.");
                let get = |key: &str| dict.get(&format!("{prefix}{key}")).cloned();
                match A::load_state(&get, p, o) {
                    Ok(s) => states.push(s),
                    Err(e) => problems.push(format!("state of parameter {index}: {e}")),
                }
                index += 1;
            }
            new_state.push(states);
        }
        for key in dict.keys() {
            let Some(rest) = key.strip_prefix("state.") else {
                problems.push(format!("Unexpected key(s) in state_dict: \"{key}\"."));
                continue;
            };
            let known = rest
                .split_once('.')
                .and_then(|(i, _)| i.parse::<usize>().ok())
                .is_some_and(|i| i < index);
            if !known {
                problems.push(format!("Unexpected key(s) in state_dict: \"{key}\"."));
            }
        }
        if !problems.is_empty() {
            return Err(err(problems.join("\n\t")));
        }
        for ((group, o), lr0) in self.groups.iter_mut().zip(options).zip(initial_lrs) {
            group.options = o;
            if let Some(lr0) = lr0 {
                group.set_initial_lr(lr0);
            }
        }
        self.state = new_state;
        Ok(())
    }

    /// The options and `initial_lr` of each group from `dict`'s `param_groups` JSON, checked
    /// against this optimizer's groups.
    #[expect(
        clippy::type_complexity,
        reason = "a private helper's pair of per-group lists"
    )]
    fn read_groups(
        &self,
        dict: &StateDict,
    ) -> std::result::Result<(Vec<A::Options>, Vec<Option<f64>>), String> {
        let text = dict
            .metadata(PARAM_GROUPS)
            .ok_or("missing metadata key \"param_groups\"")?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("\"param_groups\" is not valid JSON: {e}"))?;
        let groups = value
            .as_array()
            .ok_or("\"param_groups\" is not a list of groups")?;
        if groups.len() != self.groups.len() {
            return Err("loaded state dict has a different number of parameter groups".to_string());
        }
        let mut options = Vec::with_capacity(groups.len());
        let mut initial_lrs = Vec::with_capacity(groups.len());
        for (saved, group) in groups.iter().zip(&self.groups) {
            let map: &Map<String, Value> = saved
                .as_object()
                .ok_or("a parameter group is not a JSON object")?;
            let n = map
                .get("params")
                .and_then(Value::as_array)
                .ok_or("a parameter group has no \"params\" list")?
                .len();
            if n != group.params.len() {
                return Err(
                    "loaded state dict contains a parameter group that doesn't match \
                            the size of optimizer's group"
                        .to_string(),
                );
            }
            let o = group.options.with_json(map)?;
            o.validate().map_err(|e| e.to_string())?;
            options.push(o);
            initial_lrs.push(map.get("initial_lr").and_then(Value::as_f64));
        }
        Ok((options, initial_lrs))
    }
}

/// The step count as the 0-dim `f32` tensor PyTorch 2 keeps.
pub(crate) fn step_tensor(step: f64) -> Tensor {
    Tensor::scalar(step as f32)
}

/// Reads a `step` entry back.
pub(crate) fn read_step(get: &dyn Fn(&str) -> Option<Tensor>) -> std::result::Result<f64, String> {
    let t = get("step").ok_or("missing key \"step\"")?;
    if t.numel() != 1 {
        return Err(format!(
            "\"step\" has shape {:?}, expected a scalar",
            t.shape()
        ));
    }
    t.to_dtype(crate::DType::F64)
        .and_then(|t| t.item::<f64>())
        .map_err(|e| e.to_string())
}

/// Reads a state tensor named `name` back, checked against `p`'s shape and converted to its
/// dtype and device.
pub(crate) fn read_like(
    get: &dyn Fn(&str) -> Option<Tensor>,
    name: &str,
    p: &Tensor,
) -> std::result::Result<Tensor, String> {
    let t = get(name).ok_or_else(|| format!("missing key \"{name}\""))?;
    if t.shape() != p.shape() {
        return Err(format!(
            "size mismatch for \"{name}\": copying a param with shape {:?}, the shape in current \
             model is {:?}",
            t.shape(),
            p.shape()
        ));
    }
    let t = t.to_dtype(p.dtype()).map_err(|e| e.to_string())?;
    let t = t.to(p.device()).map_err(|e| e.to_string())?;
    // A private copy: the state is updated in place.
    t.copy().map_err(|e| e.to_string())
}
