//! Inspecting a graph: draws the backward graph of the README's first example as Graphviz DOT
//! (`viz::to_dot`) and profiles its backward pass (`profiler::profile`).
//!
//! ```text
//! cargo run --example inspect_graph                      # writes target/inspect_graph/graph.dot
//! cargo run --example inspect_graph -- docs/graph.dot    # or where you say
//! dot -Tsvg docs/graph.dot -o docs/graph.svg             # render it with Graphviz
//! ```
//!
//! The README's picture (`docs/graph.svg`, `docs/graph.png`) is this example's output.

use std::path::PathBuf;

use autograd::{Tensor, profiler, viz};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from("target/inspect_graph/graph.dot"),
        PathBuf::from,
    );

    // The README's first example.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let y = x.mul(&x)?.sum()?; // y = Σ x²

    let dot = viz::to_dot(&y);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, &dot)?;
    println!("{dot}");
    println!(
        "wrote {} (render: dot -Tsvg {0} -o graph.svg)",
        path.display()
    );

    let (result, prof) = profiler::profile(|| y.backward());
    result?;
    println!("\n{}", prof.key_averages());
    assert_eq!(
        x.grad().map(|g| g.to_vec::<f64>()).transpose()?,
        Some(vec![2.0, 4.0, 6.0])
    );
    Ok(())
}
