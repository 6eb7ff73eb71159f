//! Tests of `layers` (to come).
