//! Tests of `optim` (to come).
