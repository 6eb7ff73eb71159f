//! What the options structs share: PyTorch's `ValueError` texts (floats as Python prints them,
//! `error::py_float`) and reading and writing the `param_groups` JSON.

use serde_json::{Map, Number, Value};

use crate::error::py_float;
use crate::{Error, Result};

/// Refuses `value < 0` with PyTorch's `"Invalid {what}: {value}"`.
pub(crate) fn non_negative(what: &str, value: f64) -> Result<()> {
    if value < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "Invalid {what}: {}",
            py_float(value)
        )));
    }
    Ok(())
}

/// A float as a JSON number (NaN and infinities, which JSON lacks, as `null`).
pub(crate) fn json_f64(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// Reads `map[key]` as a float into `slot` if present.
pub(crate) fn read_f64(
    map: &Map<String, Value>,
    key: &str,
    slot: &mut f64,
) -> std::result::Result<(), String> {
    if let Some(v) = map.get(key) {
        *slot = v
            .as_f64()
            .ok_or_else(|| format!("param_groups: \"{key}\" is not a number: {v}"))?;
    }
    Ok(())
}

/// Reads `map[key]` as a boolean into `slot` if present.
pub(crate) fn read_bool(
    map: &Map<String, Value>,
    key: &str,
    slot: &mut bool,
) -> std::result::Result<(), String> {
    if let Some(v) = map.get(key) {
        *slot = v
            .as_bool()
            .ok_or_else(|| format!("param_groups: \"{key}\" is not a boolean: {v}"))?;
    }
    Ok(())
}

/// Reads `map[key]` as `null` or a boolean into `slot` if present.
pub(crate) fn read_opt_bool(
    map: &Map<String, Value>,
    key: &str,
    slot: &mut Option<bool>,
) -> std::result::Result<(), String> {
    if let Some(v) = map.get(key) {
        *slot = match v {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => {
                return Err(format!(
                    "param_groups: \"{key}\" is not null or a boolean: {v}"
                ));
            }
        };
    }
    Ok(())
}

/// `null` or a boolean.
pub(crate) fn json_opt_bool(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

/// The keys every optimizer's `param_groups` entries carry with fixed values here
/// (`differentiable`, `foreach`, and `capturable` where PyTorch has it).
pub(crate) fn fixed_keys(map: &mut Map<String, Value>, capturable: bool) {
    map.insert("foreach".into(), Value::Null);
    map.insert("differentiable".into(), Value::Bool(false));
    if capturable {
        map.insert("capturable".into(), Value::Bool(false));
    }
}

#[cfg(test)]
mod tests {
    use super::py_float;

    #[test]
    fn floats_print_as_python_prints_them() {
        for (x, s) in [
            (-0.1, "-0.1"),
            (1.0, "1.0"),
            (-1.0, "-1.0"),
            (1e-8, "1e-08"),
            (-1e-10, "-1e-10"),
            (0.0001, "0.0001"),
            (2.5e20, "2.5e+20"),
            (1e16, "1e+16"),
            (123.25, "123.25"),
        ] {
            assert_eq!(py_float(x), s);
        }
    }
}
