//! Module hooks (`nn::Hooked`) against PyTorch 2.15. The PyTorch program, with its output:
//!
//! ```python
//! torch.manual_seed(0); lin = nn.Linear(3, 2).double(); order = []
//! def pre1(m, args): order.append('pre1'); return (args[0] * 2,)
//! def pre2(m, args): order.append('pre2')
//! def fwd(m, args, out): order.append('fwd'); return out + 1
//! def bpre(m, go): order.append('bpre'); return (go[0] * 3,)
//! def bw(m, gi, go): order.append('bw'); return (gi[0] * 0.5,)
//! (hooks registered in that order)
//! x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=torch.float64, requires_grad=True)
//! lin(x).sum().backward()
//! # bw sees grad_output [[3, 3], [3, 3]], grad_input [[-1.28765.., 0.26204.., -0.96109..]] * 2 rows
//! # order ['pre1', 'pre2', 'fwd', 'bpre', 'bw']
//! # y [[-0.6323328390717506, 0.6474342048168182], [-1.6510849297046661, -2.3072228729724884]]
//! # x.grad [[-1.2876513563096523, 0.2620406001806259, -0.9610938280820847]] * 2 rows
//! # lin.weight.grad [[30, 42, 54], [30, 42, 54]]
//! ```

use std::sync::{Arc, Mutex};

use autograd::nn::{Forward, Hooked, Linear, Module, Sequential};
use autograd::{DType, Result, Tensor, manual_seed};

use crate::common::global_rng;

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{got:?} against {want:?}"
        );
    }
}

#[test]
fn hooks_run_in_pytorchs_order_and_replace_what_pytorchs_replace() -> Result<()> {
    let mut lin = {
        let _rng = global_rng(0);
        manual_seed(0);
        Linear::new(3, 2)?
    };
    lin.to_dtype(DType::F64)?;
    let lin = Hooked::new(lin);
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen_grad_output = Arc::new(Mutex::new(Vec::new()));
    let log = |name: &'static str| {
        let order = order.clone();
        move || order.lock().unwrap().push(name.to_string())
    };
    let (l1, l2, l3, l4, l5) = (log("pre1"), log("pre2"), log("fwd"), log("bpre"), log("bw"));
    lin.register_forward_pre_hook(move |_, x| {
        l1();
        Ok(Some(x.mul_scalar(2)?))
    });
    let second = lin.register_forward_pre_hook(move |_, _| {
        l2();
        Ok(None)
    });
    lin.register_forward_hook(move |_, _, out| {
        l3();
        Ok(Some(out.add_scalar(1)?))
    });
    lin.register_full_backward_pre_hook(move |go| {
        l4();
        Ok(Some(vec![Some(go[0].as_ref().unwrap().mul_scalar(3)?)]))
    });
    let seen = seen_grad_output.clone();
    lin.register_full_backward_hook(move |gi, go| {
        l5();
        seen.lock()
            .unwrap()
            .push(go[0].as_ref().unwrap().to_vec::<f64>()?);
        Ok(Some(vec![Some(gi[0].as_ref().unwrap().mul_scalar(0.5)?)]))
    });
    let x =
        Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?.requires_grad_(true)?;
    let y = lin.forward(&x)?;
    y.sum()?.backward()?;
    assert_eq!(
        *order.lock().unwrap(),
        ["pre1", "pre2", "fwd", "bpre", "bw"]
    );
    assert_eq!(*seen_grad_output.lock().unwrap(), [vec![3.0; 4]]);
    close(
        &y.to_vec::<f64>()?,
        &[
            -0.6323328390717506,
            0.6474342048168182,
            -1.6510849297046661,
            -2.3072228729724884,
        ],
    );
    let row = [-1.2876513563096523, 0.2620406001806259, -0.9610938280820847];
    close(
        &x.grad().expect("x grad").to_vec::<f64>()?,
        &[row, row].concat(),
    );
    close(
        &lin.inner()
            .weight()
            .grad()
            .expect("weight grad")
            .to_vec::<f64>()?,
        &[30.0, 42.0, 54.0, 30.0, 42.0, 54.0],
    );

    // A removed hook no longer runs.
    second.remove();
    order.lock().unwrap().clear();
    lin.forward(&x)?;
    assert_eq!(*order.lock().unwrap(), ["pre1", "fwd"]);
    Ok(())
}

#[test]
fn without_an_input_gradient_the_backward_hook_runs_at_the_output_with_none() -> Result<()> {
    // PyTorch: `got == [((None,), [[1.0, 1.0]])]` for an input that does not require grad.
    let lin = Hooked::new({
        let _rng = global_rng(1);
        Linear::new(3, 2)?
    });
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    lin.register_full_backward_hook(move |gi, go| {
        g.lock()
            .unwrap()
            .push((gi[0].is_none(), go[0].as_ref().unwrap().to_vec::<f32>()?));
        Ok(None)
    });
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3])?;
    lin.forward(&x)?.sum()?.backward()?;
    assert_eq!(*got.lock().unwrap(), [(true, vec![1.0, 1.0])]);
    Ok(())
}

#[test]
fn a_hooked_layer_is_transparent_inside_a_model() -> Result<()> {
    let _rng = global_rng(2);
    let hooked = Hooked::new(Linear::new(4, 2)?);
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    hooked.register_forward_hook(move |_, _, _| {
        *c.lock().unwrap() += 1;
        Ok(None)
    });
    let model = Sequential::new().add(Linear::new(3, 4)?).add(hooked);
    let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, ["0.weight", "0.bias", "1.weight", "1.bias"]);
    assert_eq!(
        model.to_string(),
        "Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)\n  \
         (1): Linear(in_features=4, out_features=2, bias=True)\n)"
    );
    model.forward(&Tensor::ones(&[5, 3], DType::F32)?)?;
    assert_eq!(*calls.lock().unwrap(), 1);
    // Hooks that fail stop the pass with their error.
    let failing = Hooked::new(Linear::new(2, 2)?);
    failing.register_forward_pre_hook(|_, _| Err(autograd::Error::msg("refused by a hook")));
    let err = failing
        .forward(&Tensor::ones(&[1, 2], DType::F32)?)
        .unwrap_err();
    assert_eq!(err.to_string(), "refused by a hook");
    Ok(())
}
