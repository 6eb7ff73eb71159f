//! Hooks and saved state: tensor and node hooks, their fallible forms, saved-tensor hooks, and
//! state kept from the forward for the backward.

mod fallible_hooks;
mod hooks;
mod saved_state;
mod saved_tensor_hooks;
