//! The second main job: a character-level GPT trained on Shakespeare (`cargo run --release -p
//! train-gpt`). The library part holds the model and the data so that the trajectory test
//! (`tests/trajectory.rs`) drives the same code as the program.

pub mod data;
pub mod model;

pub use data::Corpus;
pub use model::{Config, Gpt};
