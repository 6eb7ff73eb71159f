//! `viz::to_dot`: the DOT text names every node, Graphviz accepts it, and a graph a million nodes
//! deep renders without deep recursion.

use std::io::Write;
use std::process::{Command, Stdio};

use autograd::*;

/// Depth of the chain rendered by `a_million_node_chain_renders_without_overflow`.
const CHAIN_NODES: usize = 1_000_000;

/// Runs `dot -Tsvg` on `source`; `None` (after printing why) when Graphviz is not installed.
fn render_svg(source: &str) -> Option<String> {
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped: graphviz `dot` not found");
            return None;
        }
        Err(e) => panic!("could not run `dot`: {e}"),
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    let source = source.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(source.as_bytes()));
    let out = child.wait_with_output().expect("`dot` runs");
    writer
        .join()
        .expect("writer thread")
        .expect("write to `dot`");
    assert!(
        out.status.success(),
        "`dot` rejected the graph: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("SVG is UTF-8"))
}

#[test]
fn graphviz_parses_an_mlp_graph() -> Result<()> {
    let x = Tensor::randn_seeded(&[8, 4], DType::F32, 1)?;
    let w1 = Tensor::randn_seeded(&[4, 16], DType::F32, 2)?.requires_grad_(true)?;
    let b1 = Tensor::zeros(&[16], DType::F32)?.requires_grad_(true)?;
    let w2 = Tensor::randn_seeded(&[16, 3], DType::F64, 3)?.requires_grad_(true)?;
    let h = x.matmul(&w1)?.add(&b1)?.relu()?.to_dtype(DType::F64)?;
    let parts = h.matmul(&w2)?.chunk(3, 1)?; // a node with several outputs
    let loss = parts[0].mul(&parts[2])?.log_softmax(0)?.mean()?;
    let dot = viz::to_dot(&loss);
    for name in [
        "MeanBackward0",
        "LogSoftmaxBackward0",
        "MulBackward0",
        "MmBackward0",
        "ReluBackward0",
        "AddBackward0",
        "AccumulateGrad",
    ] {
        assert!(dot.contains(name), "{name} missing from\n{dot}");
    }
    // Leaves with shape and dtype; saved tensors with theirs.
    assert!(dot.contains("AccumulateGrad\\n[4, 16] f32"), "{dot}");
    assert!(dot.contains("AccumulateGrad\\n[16, 3] f64"), "{dot}");
    assert!(dot.contains("fillcolor=orange"), "{dot}");
    // The chunks' edges name the output they carry.
    assert!(
        dot.contains("[label=\"0\"]") && dot.contains("[label=\"2\"]"),
        "{dot}"
    );
    let Some(svg) = render_svg(&dot) else {
        return Ok(());
    };
    assert!(svg.contains("<svg"), "{svg}");
    assert!(svg.contains("LogSoftmaxBackward0"), "{svg}");
    Ok(())
}

#[test]
fn graphviz_parses_labels_that_need_escaping() -> Result<()> {
    use autograd::{backward, differentiable};

    #[differentiable(name = "Odd \"name\" \\ here")]
    fn odd(x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(2.0)
    }

    #[backward(odd)]
    fn odd_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let _ = x;
        grad.mul_scalar(2.0)
    }

    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let dot = viz::to_dot(&odd(&x)?);
    assert!(dot.contains(r#"Odd \"name\" \\ here"#), "{dot}");
    assert!(dot.contains("x\\n[] f64"), "the saved input:\n{dot}");
    if let Some(svg) = render_svg(&dot) {
        assert!(svg.contains("Odd &quot;name&quot; \\ here"), "{svg}");
    }
    Ok(())
}

#[test]
fn a_million_node_chain_renders_without_overflow() -> Result<()> {
    let x = Tensor::scalar(1.0f32).requires_grad_(true)?;
    let mut y = x.clone();
    for _ in 0..CHAIN_NODES {
        y = y.mul_scalar(1.0)?;
    }
    let dot = viz::to_dot(&y);
    assert_eq!(dot.matches("[label=\"MulBackward0\"]").count(), CHAIN_NODES);
    assert_eq!(dot.matches(" -> ").count(), CHAIN_NODES + 1);
    assert!(dot.contains(&format!(
        "n{CHAIN_NODES} [label=\"AccumulateGrad\\n[] f32\""
    )));
    drop(y); // frees the chain (iteratively, by `NodeRef`'s drop)
    Ok(())
}
