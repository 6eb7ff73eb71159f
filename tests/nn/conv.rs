//! Tests of `conv` (to come).
