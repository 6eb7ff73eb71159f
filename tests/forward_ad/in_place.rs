//! Forward mode through the in-place ops where their operands alias the written tensor, through
//! their backward (forward over reverse) on views of intermediates, and on expanded views: the
//! cases the function-transform corpus found wrong or refused before `mul_` and `div_` had rules
//! (PyTorch's values, recorded with PyTorch 2.15 where given).

use autograd::functional::{JacobianOptions, Strategy, hessian};
use autograd::{Result, Tensor, forward_ad, profiler};

/// `y.op_(operand(&y))` on a dual copy of `[2, 3]` with tangent ones: its value and tangent.
fn aliased(op: fn(&Tensor, &Tensor) -> Result<()>, operand: Op) -> Result<(Vec<f64>, Vec<f64>)> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(
        &Tensor::from_vec(vec![2.0f64, 3.0], &[2])?,
        &Tensor::from_vec(vec![1.0f64, 1.0], &[2])?,
    )?;
    let y = x.copy()?;
    op(&y, &operand(&y)?)?;
    let unpacked = forward_ad::unpack_dual(&y)?;
    let tangent = unpacked.tangent.expect("a tangent");
    Ok((unpacked.primal.to_vec()?, tangent.to_vec()?))
}

type Op = fn(&Tensor) -> Result<Tensor>;

/// PyTorch's in-place formulas read the operand after the op (`other_p`) and the written tensor
/// before it (`original_self_p`): `y.mul_(y)` has tangent `t·y² + t·y₀` (not `2·t·y₀`), and
/// `y.div_(y)` tangent `(t - t·1) / 1 = 0`.
#[test]
fn an_operand_aliasing_the_written_tensor_gives_pytorchs_tangent() -> Result<()> {
    let mul: fn(&Tensor, &Tensor) -> Result<()> = |y, o| y.mul_(o).map(drop);
    let div: fn(&Tensor, &Tensor) -> Result<()> = |y, o| y.div_(o).map(drop);
    let itself: Op = |y| Ok(y.clone());
    let a_view: Op = |y| y.narrow(0, 0, 2);
    let a_copy: Op = |y| y.mul_scalar(1.0);
    assert_eq!(aliased(mul, itself)?, (vec![4.0, 9.0], vec![6.0, 12.0]));
    assert_eq!(aliased(mul, a_view)?, (vec![4.0, 9.0], vec![6.0, 12.0]));
    assert_eq!(aliased(mul, a_copy)?, (vec![4.0, 9.0], vec![4.0, 6.0]));
    assert_eq!(aliased(div, itself)?, (vec![1.0, 1.0], vec![0.0, 0.0]));
    assert_eq!(aliased(div, a_view)?, (vec![1.0, 1.0], vec![0.0, 0.0]));
    Ok(())
}

/// `mul_` and `div_` compute their tangents by their rules: no backward pass runs.
#[test]
fn mul_and_div_in_place_run_their_rules() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(
        &Tensor::from_vec(vec![2.0f64, 3.0], &[2])?,
        &Tensor::from_vec(vec![1.0f64, -1.0], &[2])?,
    )?;
    let (y, prof) = profiler::profile(|| -> Result<Tensor> {
        let y = x.exp()?;
        y.mul_(&x)?;
        y.div_(&x.add_scalar(1.0)?)?;
        Ok(y)
    });
    let tangent = forward_ad::unpack_dual(&y?)?.tangent.expect("a tangent");
    // d/dx [eˣ·x / (x + 1)] = eˣ·(x² + x + 1) / (x + 1)².
    let expected: Vec<f64> = [(2.0f64, 1.0), (3.0, -1.0)]
        .iter()
        .map(|&(x, t)| t * x.exp() * (x * x + x + 1.0) / ((x + 1.0) * (x + 1.0)))
        .collect();
    for (got, want) in tangent.to_vec::<f64>()?.iter().zip(&expected) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    let nodes: Vec<&str> = prof.events().iter().map(|e| e.name.as_str()).collect();
    assert!(nodes.is_empty(), "a backward pass ran: {nodes:?}");
    Ok(())
}

/// Forward over reverse through `div_` and `mul_` on views of intermediates (the backward reads
/// the written tensor's value from before the op, and its tangent from before the op too): the
/// Hessian equals reverse over reverse's. Before, the rule path's saved copy had no tangent (a
/// wrong Hessian) and the view's history was rebased after the rule had read it (a panic).
#[test]
fn forward_over_reverse_through_in_place_ops_on_views() -> Result<()> {
    let f = |xs: &[Tensor]| -> Result<Tensor> {
        let x = &xs[0];
        let w = &xs[1];
        let base = x.sin()?.mul(w)?;
        let row = base.narrow(0, 0, 1)?;
        row.div_(&w.narrow(0, 0, 1)?.exp()?)?;
        let col = base.transpose(0, 1)?.narrow(0, 1, 1)?;
        col.mul_(&x.narrow(0, 1, 1)?.transpose(0, 1)?.narrow(0, 1, 1)?)?;
        let flat = base.reshape(&[4])?;
        flat.narrow(0, 3, 1)?.div_(&w.sum()?.reshape(&[1])?)?;
        base.exp()?.mul(&base)?.sum()
    };
    let x = Tensor::from_vec(vec![0.3f64, -0.7, 1.1, 0.4], &[2, 2])?;
    let w = Tensor::from_vec(vec![0.9f64, 1.3, -0.5, 0.8], &[2, 2])?;
    let inputs = [x, w];
    let forward = {
        let _serial = crate::serial();
        hessian(
            f,
            &inputs,
            JacobianOptions::new()
                .vectorize(true)
                .strategy(Strategy::ForwardMode),
        )?
    };
    let reverse = hessian(f, &inputs, JacobianOptions::new())?;
    for (i, (row_f, row_r)) in forward.iter().zip(&reverse).enumerate() {
        for (j, (a, b)) in row_f.iter().zip(row_r).enumerate() {
            let (a, b) = (a.to_vec::<f64>()?, b.to_vec::<f64>()?);
            assert!(a.iter().any(|v| *v != 0.0), "block [{i}][{j}] is zero");
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() < 1e-10, "block [{i}][{j}]: {a:?} vs {b:?}");
            }
        }
    }
    Ok(())
}

/// `zero_` and `fill_` write an expanded view (each element of the base several times), and so
/// does their rule into its tangent: PyTorch's `self_t.zero_()`. A copy into that tangent was
/// refused ("more than one element of the written-to tensor refers to a single memory
/// location").
#[test]
fn zero_and_fill_on_an_expanded_view_zero_its_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(
        &Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3, 1])?,
        &Tensor::from_vec(vec![1.0f64, 1.0, 1.0], &[3, 1])?,
    )?;
    for fill in [false, true] {
        let y = x.exp()?;
        let e = y.narrow(0, 0, 2)?.expand(&[2, 4])?;
        if fill {
            e.fill_(0.5)?;
        } else {
            e.zero_()?;
        }
        let tangent = forward_ad::unpack_dual(&y)?.tangent.expect("a tangent");
        assert_eq!(tangent.to_vec::<f64>()?, vec![0.0, 0.0, 3.0f64.exp()]);
    }
    Ok(())
}
