//! Tests of `checkpoint` (to come).
