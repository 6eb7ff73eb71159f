//! Schedulers' state dicts: PyTorch's `scheduler.state_dict()` as a JSON object.
//!
//! Every value PyTorch keeps is a number, a string, a boolean, a list or a dictionary, so the
//! state is a [`serde_json`] object under PyTorch's keys. JSON has no infinities or NaN: those
//! are written as the strings `"inf"`, `"-inf"` and `"nan"` (what Python's `float()` reads back),
//! and read back from those strings or from Python's `json.dumps` spellings `"Infinity"`,
//! `"-Infinity"` and `"NaN"`.

use serde_json::{Map, Number, Value};

use super::Base;
use crate::{Error, Result};

/// A float as JSON: a number, or `"inf"`, `"-inf"`, `"nan"`.
pub(crate) fn f64_json(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("nan".into()),
        None if x > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// Floats as a JSON list.
pub(crate) fn f64s_json(xs: &[f64]) -> Value {
    Value::Array(xs.iter().map(|&x| f64_json(x)).collect())
}

/// A float read back from [`f64_json`]'s forms (or Python's `Infinity` spellings).
pub(crate) fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "inf" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
            "nan" | "NaN" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
}

/// Reads a scheduler's state: each key is taken once, and [`finish`](Reader::finish) reports the
/// keys nobody took. Nothing is written to the scheduler until every key has been read, so a bad
/// state changes nothing.
pub(crate) struct Reader<'a> {
    map: &'a Map<String, Value>,
    name: &'static str,
    taken: Vec<&'static str>,
}

impl<'a> Reader<'a> {
    /// A reader of `map` for the scheduler called `name` (for the errors).
    pub(crate) fn new(map: &'a Map<String, Value>, name: &'static str) -> Reader<'a> {
        Reader {
            map,
            name,
            taken: Vec::new(),
        }
    }

    /// An [`Error::StateDict`] naming the scheduler.
    pub(crate) fn error(&self, message: String) -> Error {
        Error::StateDict {
            module: self.name.to_string(),
            message,
        }
    }

    /// The value under `key`, if any (marks it as read).
    pub(crate) fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.map.get(key)
    }

    /// `key` as a float, or `default` when absent (PyTorch's `__dict__.update` keeps what is
    /// not in the dict).
    pub(crate) fn f64(&mut self, key: &'static str, default: f64) -> Result<f64> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                as_f64(v).ok_or_else(|| self.error(format!("\"{key}\" is not a number: {v}")))
            }
        }
    }

    /// `key` as an integer, or `default` when absent.
    pub(crate) fn i64(&mut self, key: &'static str, default: i64) -> Result<i64> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .or_else(|| v.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
                .ok_or_else(|| self.error(format!("\"{key}\" is not an integer: {v}"))),
        }
    }

    /// `key` as a boolean, or `default` when absent.
    pub(crate) fn bool(&mut self, key: &'static str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| self.error(format!("\"{key}\" is not a boolean: {v}"))),
        }
    }

    /// `key` as a string, or `None` when absent.
    pub(crate) fn str(&mut self, key: &'static str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.error(format!("\"{key}\" is not a string: {v}"))),
        }
    }

    /// `key` as a list of `n` floats, or `default` when absent.
    pub(crate) fn f64s(
        &mut self,
        key: &'static str,
        n: usize,
        default: &[f64],
    ) -> Result<Vec<f64>> {
        let Some(v) = self.get(key) else {
            return Ok(default.to_vec());
        };
        let list = v
            .as_array()
            .and_then(|a| a.iter().map(as_f64).collect::<Option<Vec<f64>>>())
            .ok_or_else(|| self.error(format!("\"{key}\" is not a list of numbers: {v}")))?;
        if list.len() != n {
            return Err(self.error(format!(
                "\"{key}\" has {} values, the scheduler has {n} parameter groups",
                list.len()
            )));
        }
        Ok(list)
    }

    /// PyTorch's `LRScheduler` attributes: `base_lrs`, `last_epoch`, `_step_count`, `_last_lr`
    /// (and the flags `_is_initial`, `_get_lr_called_within_step`, read and dropped: they are
    /// only set inside a step).
    pub(crate) fn base(&mut self, base: &Base) -> Result<Base> {
        let n = base.base_lrs.len();
        let base_lrs = self.f64s("base_lrs", n, &base.base_lrs)?;
        let last_epoch = self.i64("last_epoch", base.last_epoch)?;
        let step_count = self.i64("_step_count", base.step_count as i64)?;
        let step_count = u64::try_from(step_count)
            .map_err(|_| self.error(format!("\"_step_count\" is negative: {step_count}")))?;
        let last_lr = self.f64s("_last_lr", n, &base.last_lr)?;
        self.bool("_is_initial", false)?;
        self.bool("_get_lr_called_within_step", false)?;
        Ok(Base {
            base_lrs,
            last_epoch,
            step_count,
            last_lr,
            is_initial: false,
        })
    }

    /// Refuses keys that were not read, in PyTorch's words for a module's state dict.
    pub(crate) fn finish(self) -> Result<()> {
        let unexpected: Vec<String> = self
            .map
            .keys()
            .filter(|k| !self.taken.contains(&k.as_str()))
            .map(|k| format!("\"{k}\""))
            .collect();
        if unexpected.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!(
                "Unexpected key(s) in state_dict: {}.",
                unexpected.join(", ")
            )))
        }
    }
}

impl Base {
    /// PyTorch's `LRScheduler` attributes under its keys.
    pub(crate) fn to_json(&self, map: &mut Map<String, Value>) {
        map.insert("base_lrs".into(), f64s_json(&self.base_lrs));
        map.insert("last_epoch".into(), Value::from(self.last_epoch));
        map.insert("_step_count".into(), Value::from(self.step_count));
        map.insert("_is_initial".into(), Value::Bool(false));
        map.insert("_get_lr_called_within_step".into(), Value::Bool(false));
        map.insert("_last_lr".into(), f64s_json(&self.last_lr));
    }
}
