//! Typed IR of a forward (`DiffFn`) and of a backward (`BackwardFn`), lowered from `syn` with
//! the syntactic rules of the DSL. Cross-cutting rules (backward against forward, options against
//! parameters) live in `valid/`.
//!
//! By concept: the forward (`forward.rs`) and what it returns (`output.rs`), the backward
//! (`backward.rs`), the rules on both signatures (`signature.rs`), the type shapes the DSL
//! recognizes (`types.rs`), and the straight-line body of a derived function (`body/`).

mod backward;
pub(crate) mod body;
mod forward;
mod output;
mod signature;
mod types;

pub(crate) use backward::{BackwardFn, BwParam, GradType, is_param_attr};
pub(crate) use forward::{DiffFn, Param, ParamKind, Source, public_return};
pub(crate) use signature::params_end;
pub(crate) use types::{
    bool_array_len, is_bool_slice_ref, is_input_metadata, is_input_metadata_ref,
    is_option_tensor_ref, is_slice_ref_of, is_tensor, is_tensor_ref, is_tensor_slice_ref,
    option_inner, result_ok_type, type_string, vec_inner,
};

#[cfg(test)]
mod tests;
