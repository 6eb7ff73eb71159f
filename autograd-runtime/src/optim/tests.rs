//! Unit tests of the optimizers.
