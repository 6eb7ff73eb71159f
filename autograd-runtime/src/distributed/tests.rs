//! Tests of the reducer over `LocalGroup`: ranks are threads.
