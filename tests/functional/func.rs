//! `autograd::func` (issue 37): the `torch.func` transforms against PyTorch 2.15. Each expected
//! value was printed by `/tmp/torchenv/bin/python` with the line quoted above it (f64 tensors,
//! `x = [0.5, -1.0, 2.0]`, `w = [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]`), rounded to 15 digits.

use autograd::func::{self, Aux, FunctionalCallOptions, functional_call, functional_call_with};
use autograd::nn::{Forward, Linear, Module};
use autograd::{DType, Result, StateDict, Tensor, forward_ad, no_grad};

fn t(values: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape).unwrap()
}

fn x() -> Tensor {
    t(&[0.5, -1.0, 2.0], &[3])
}

fn w() -> Tensor {
    t(&[0.1, -0.2, 0.3, 0.4, 0.5, -0.6], &[2, 3])
}

#[track_caller]
fn close(actual: &Tensor, expected: &[f64], shape: &[usize]) {
    assert_eq!(actual.shape(), shape);
    let got = actual.to_vec::<f64>().unwrap();
    for (i, (a, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() < 1e-12,
            "element {i}: {a} against PyTorch's {e}"
        );
    }
}

/// `sum(sin(x) · x²)`.
fn f(a: &[Tensor]) -> Result<Tensor> {
    a[0].sin()?.mul(&a[0].pow(2.0)?)?.sum()
}

/// `tanh(w @ x)`, of `(x, w)`.
fn g(a: &[Tensor]) -> Result<Tensor> {
    a[1].matmul(&a[0])?.tanh()
}

#[test]
fn grad_and_its_compositions_match_pytorch() {
    // grad(f)(x)
    let gx = func::grad(f, 0)(&[x()]).unwrap();
    close(
        &gx,
        &[0.698821179076796, 2.223244275483933, 1.972602361114157],
        &[3],
    );
    assert!(
        !gx.requires_grad(),
        "nothing outside requires grad: detached"
    );
    // grad(grad(lambda t: t**3 * t.sin()))(torch.tensor(0.7))
    let cube_sin = |a: &[Tensor]| a[0].pow(3.0)?.mul(&a[0].sin()?);
    let d2 = func::grad(func::grad(cube_sin, 0), 0)(&[Tensor::scalar(0.7f64)]).unwrap();
    close(&d2, &[4.73338365029217], &[]);
    // grad_and_value, with has_aux: (grad, (value, aux))
    let with_aux = |a: &[Tensor]| -> Result<_> { Ok((f(a)?, Aux("aux"))) };
    let (g2, (value, aux)) = func::grad_and_value(with_aux, 0)(&[x()]).unwrap();
    close(&g2, &gx.to_vec::<f64>().unwrap(), &[3]);
    assert!(
        (value.item::<f64>().unwrap() - f(&[x()]).unwrap().item::<f64>().unwrap()).abs() < 1e-15
    );
    assert_eq!(aux, "aux");
    // An argument f does not use gets zeros; a second argument's gradient by argnums.
    let uses_first = |a: &[Tensor]| a[0].sum();
    let [g0, g1] = func::grad(uses_first, [0, 1])(&[x(), w()]).unwrap();
    close(&g0, &[1.0, 1.0, 1.0], &[3]);
    close(&g1, &[0.0; 6], &[2, 3]);
}

#[test]
fn grad_composes_with_regular_autograd() {
    // wr = tensor([0.5, -2.], requires_grad=True); xr = tensor([1., 3.])
    // gp = grad(lambda x: (wr * x).pow(2).sum())(xr); gp.sum().backward()
    let wr = t(&[0.5, -2.0], &[2]).requires_grad_(true).unwrap();
    let captured = wr.clone();
    let gp = func::grad(move |a: &[Tensor]| captured.mul(&a[0])?.pow(2.0)?.sum(), 0)(&[t(
        &[1.0, 3.0],
        &[2],
    )])
    .unwrap();
    assert!(
        gp.requires_grad(),
        "depends on a captured tensor that requires grad"
    );
    close(&gp.detach(), &[0.5, 24.0], &[2]);
    gp.sum().unwrap().backward().unwrap();
    close(&wr.grad().unwrap(), &[2.0, -24.0], &[2]);
    // Under no_grad the gradient is plain.
    let _off = no_grad();
    let captured = wr.clone();
    let plain = func::grad(move |a: &[Tensor]| captured.mul(&a[0])?.pow(2.0)?.sum(), 0)(&[t(
        &[1.0, 3.0],
        &[2],
    )])
    .unwrap();
    assert!(!plain.requires_grad());
    close(&plain, &[0.5, 24.0], &[2]);
}

#[test]
fn jacobians_vjp_and_jvp_match_pytorch() {
    let _serial = crate::serial();
    // jx, jw = jacrev(g, argnums=(0, 1))(x, w)
    let [jx, jw] = func::jacrev(g, [0, 1])(&[x(), w()]).unwrap();
    let jx_torch = [
        0.052242298786483,
        -0.104484597572966,
        0.15672689635945,
        0.072282655569459,
        0.090353319461824,
        -0.108423983354189,
    ];
    close(&jx, &jx_torch, &[2, 3]);
    close(
        &jw,
        &[
            0.261211493932416,
            -0.522422987864832,
            1.044845975729664,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.090353319461824,
            -0.180706638923649,
            0.361413277847297,
        ],
        &[2, 2, 3],
    );
    // jacfwd(g)(x, w)
    close(
        &func::jacfwd(g, 0)(&[x(), w()]).unwrap(),
        &jx_torch,
        &[2, 3],
    );
    // out, vjp_fn = vjp(g, x, w); vjp_fn(tensor([1., -2.]))
    let (out, vjp_fn) = func::vjp(g, &[x(), w()]).unwrap();
    close(&out, &[0.691069469832931, -0.905148253644866], &[2]);
    let back = vjp_fn(&[t(&[1.0, -2.0], &[2])]).unwrap();
    close(
        &back[0],
        &[-0.092323012352436, -0.285191236496615, 0.373574863067828],
        &[3],
    );
    close(
        &back[1],
        &[
            0.261211493932416,
            -0.522422987864832,
            1.044845975729664,
            -0.180706638923649,
            0.361413277847297,
            -0.722826555694594,
        ],
        &[2, 3],
    );
    assert_eq!(
        vjp_fn(&[t(&[1.0, -2.0], &[2])]).unwrap()[0]
            .to_vec::<f64>()
            .unwrap(),
        back[0].to_vec::<f64>().unwrap()
    );
    // jvp(g, (x, w), (tensor([1., .5, -1.]), torch.ones(2, 3) * 0.1))
    let tangents = [t(&[1.0, 0.5, -1.0], &[3]), t(&[0.1; 6], &[2, 3])];
    let (out, jv) = func::jvp(g, &[x(), w()], &tangents).unwrap();
    close(&out, &[0.691069469832931, -0.905148253644866], &[2]);
    close(&jv, &[-0.078363448179725, 0.252989294493108], &[2]);
}

#[test]
fn hessians_match_pytorch() {
    let _serial = crate::serial();
    // hessian(f)(x)
    let h = func::hessian(f, 0)(&[x()]).unwrap();
    let diag = [2.594159816338101, -3.002680208280456, -5.147769546028503];
    let full = |d: [f64; 3]| [d[0], 0.0, 0.0, 0.0, d[1], 0.0, 0.0, 0.0, d[2]];
    close(&h, &full(diag), &[3, 3]);
    // jacfwd(jacfwd(f)) and jacrev(jacrev(f)): nested forward mode falls back to reverse mode.
    close(
        &func::jacfwd(func::jacfwd(f, 0), 0)(&[x()]).unwrap(),
        &full(diag),
        &[3, 3],
    );
    close(
        &func::jacrev(func::jacrev(f, 0), 0)(&[x()]).unwrap(),
        &full(diag),
        &[3, 3],
    );
    // y = [1.5, -0.5, 0.25]; h = lambda x, y: (x**2 * y).sum() + (x * y).sin().sum()
    // (hxx, hxy), (hyx, hyy) = hessian(h, argnums=(0, 1))(x, y)
    let h2 = |a: &[Tensor]| {
        a[0].pow(2.0)?
            .mul(&a[1])?
            .sum()?
            .add(&a[0].mul(&a[1])?.sin()?.sum()?)
    };
    let y = t(&[1.5, -0.5, 0.25], &[3]);
    let [[hxx, hxy], [hyx, hyy]] = func::hessian(h2, [0, 1])(&[x(), y]).unwrap();
    close(
        &hxx,
        &full([1.466312789947498, -1.119856384651051, 0.470035903837237]),
        &[3, 3],
    );
    let cross = full([1.22045979885632, -1.362130207411729, 4.637869792588271]);
    close(&hxy, &cross, &[3, 3]);
    close(&hyx, &cross, &[3, 3]);
    close(
        &hyy,
        &full([-0.170409690005834, -0.479425538604203, -1.917702154416812]),
        &[3, 3],
    );
    // jvp inside jacfwd (one dual level at a time: the double-vjp trick) is jacfwd's Jacobian.
    let jv_of = |a: &[Tensor]| {
        func::jvp(f, &[a[0].clone()], &[Tensor::ones(&[3], DType::F64)?]).map(|r| r.1)
    };
    let grad_dot_ones = func::jacfwd(jv_of, 0)(&[x()]).unwrap(); // ∂/∂x (∇f · 1) = H · 1
    close(&grad_dot_ones, &diag, &[3]);
}

#[test]
fn vmap_maps_and_nests() {
    // X = [[1., 2., 3.], [-1., .5, 0.]]; wv = [.3, -.1, .2]; loss = lambda w, xi: tanh(xi @ w) ** 2
    // vmap(grad(loss), in_dims=(None, 0))(wv, X)
    let xs = t(&[1.0, 2.0, 3.0, -1.0, 0.5, 0.0], &[2, 3]);
    let wv = t(&[0.3, -0.1, 0.2], &[3]);
    let loss = |a: &[Tensor]| a[1].matmul(&a[0])?.tanh()?.pow(2.0);
    let per_sample =
        func::vmap(func::grad(loss, 0), [None, Some(0)], 0)(&[wv.clone(), xs.clone()]).unwrap();
    close(
        &per_sample,
        &[
            0.767232310091917,
            1.534464620183833,
            2.30169693027575,
            0.596630307522734,
            -0.298315153761367,
            0.0,
        ],
        &[2, 3],
    );
    // vmap(lambda a, b: a * b, in_dims=(1, None), out_dims=1)(X, wv[:2])
    let mul = |a: &[Tensor]| a[0].mul(&a[1]);
    let out =
        func::vmap(mul, [Some(1), None], 1)(&[xs.clone(), wv.narrow(0, 0, 2).unwrap()]).unwrap();
    close(&out, &[0.3, 0.6, 0.9, 0.1, -0.05, 0.0], &[2, 3]);
    // Negative dims, a tuple of outputs with out_dims per output (None: unbatched), batch 0.
    let two = |a: &[Tensor]| -> Result<(Tensor, Tensor)> { Ok((a[0].sum()?, a[1].clone())) };
    let (sums, shared) =
        func::vmap(two, [Some(-1), None], [Some(0), None])(&[xs.clone(), wv.clone()]).unwrap();
    close(&sums, &[0.0, 2.5, 3.0], &[3]);
    assert!(shared.is_same(&wv));
    let empty = func::vmap(|a: &[Tensor]| a[0].mul_scalar(2.0), 0, 0)(&[Tensor::zeros(
        &[0, 2],
        DType::F64,
    )
    .unwrap()])
    .unwrap();
    assert_eq!(empty.shape(), &[0, 2]);
    // vmap(vmap(f)) is f on every element; gradients flow through vmap.
    let sq = |a: &[Tensor]| a[0].mul(&a[0]);
    let nested = func::vmap(func::vmap(sq, 0, 0), 0, 0)(&[xs.clone()]).unwrap();
    close(
        &nested,
        &xs.mul(&xs).unwrap().to_vec::<f64>().unwrap(),
        &[2, 3],
    );
    let through =
        func::grad(|a: &[Tensor]| func::vmap(sq, 0, 0)(a)?.sum(), 0)(&[xs.clone()]).unwrap();
    close(
        &through,
        &xs.mul_scalar(2.0).unwrap().to_vec::<f64>().unwrap(),
        &[2, 3],
    );
}

#[test]
fn functional_call_swaps_and_restores() {
    // lin = nn.Linear(3, 2).double(); W = [[.2, -.3, .1], [.05, .4, -.2]]; B = [.1, -.1]
    // mse = lambda p, xb, yb: ((functional_call(lin, p, (xb,)) - yb) ** 2).mean()
    // grad(mse)({'weight': W, 'bias': B}, X, yb) with yb = [[.5, -.5], [1., 0.]]
    let mut lin = Linear::new(3, 2).unwrap();
    lin.to_dtype(DType::F64).unwrap();
    let own: Vec<Vec<f64>> = lin
        .parameters()
        .iter()
        .map(|p| p.to_vec().unwrap())
        .collect();
    let xs = t(&[1.0, 2.0, 3.0, -1.0, 0.5, 0.0], &[2, 3]);
    let yb = t(&[0.5, -0.5, 1.0, 0.0], &[2, 2]);
    let params = [
        t(&[0.2, -0.3, 0.1, 0.05, 0.4, -0.2], &[2, 3]),
        t(&[0.1, -0.1], &[2]),
    ];
    let mse = |p: &[Tensor]| {
        let dict: StateDict = ["weight", "bias"]
            .into_iter()
            .zip(p.iter().cloned())
            .collect();
        functional_call(&mut lin, &dict, |m| m.forward(&xs))?
            .sub(&yb)?
            .pow(2.0)?
            .mean()
    };
    let [gw, gb] = func::grad(mse, [0, 1])(&params).unwrap();
    close(&gw, &[0.375, -0.8125, -0.75, 0.3, 0.6625, 0.975], &[2, 3]);
    close(&gb, &[-0.875, 0.35], &[2]);
    let after: Vec<Vec<f64>> = lin
        .parameters()
        .iter()
        .map(|p| p.to_vec().unwrap())
        .collect();
    assert_eq!(after, own, "the module's own parameters are back");
    assert!(
        lin.parameters()
            .iter()
            .all(|p| p.is_leaf() && p.requires_grad())
    );

    // Restored after an error in the call too.
    let weight = lin.weight().clone();
    let dict: StateDict = [("weight", params[0].clone())].into_iter().collect();
    let err = functional_call(&mut lin, &dict, |_| -> Result<()> {
        Err(autograd::Error::msg("boom"))
    });
    assert_eq!(err.unwrap_err().to_string(), "boom");
    assert!(lin.weight().is_same(&weight));
}

#[test]
fn functional_call_errors_are_pytorchs() {
    let mut lin = Linear::new(2, 2).unwrap();
    let x = Tensor::ones(&[1, 2], DType::F32).unwrap();
    let run = |lin: &mut Linear, keys: &[&str], options| {
        let dict: StateDict = keys
            .iter()
            .map(|k| (*k, Tensor::zeros(&[2], DType::F32).unwrap()))
            .collect();
        functional_call_with(lin, &dict, options, |m| m.forward(&x))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let lax = FunctionalCallOptions::new();
    // functional_call(nn.Linear(2, 2), {'foo': t}, (x,)): a plain attribute, ignored
    assert_eq!(run(&mut lin, &["foo"], lax), Ok(()));
    // {'0.weight': ...}
    assert_eq!(
        run(&mut lin, &["0.weight"], lax),
        Err("Linear has no attribute `0`".to_string())
    );
    // {'weight.x': ...}: the message shows the parameter as PyTorch's repr does
    let err = run(&mut lin, &["weight.x"], lax).unwrap_err();
    assert!(
        err.starts_with("submodule `weight`: Parameter containing:\ntensor(["),
        "{err}"
    );
    assert!(
        err.ends_with("requires_grad=True) is not an instance of torch.nn.Module"),
        "{err}"
    );
    // strict=True with {'bias': ...}, then with an extra 'foo'
    let strict = FunctionalCallOptions::new().strict(true);
    assert_eq!(
        run(&mut lin, &["bias"], strict),
        Err("Error(s) in reparametrizing for Linear:\n\tMissing key(s): 'weight'.".to_string())
    );
    assert_eq!(
        run(&mut lin, &["bias", "foo"], strict),
        Err("Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'foo'.\n\tMissing key(s): 'weight'.".to_string())
    );
}

#[test]
fn transform_errors_are_pytorchs() {
    let _serial = crate::serial();
    let msg = |r: Result<Tensor>| r.unwrap_err().to_string();
    // grad(lambda x: x)(x)
    assert_eq!(
        msg(func::grad(|a: &[Tensor]| Ok(a[0].clone()), 0)(&[x()])),
        "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 \
         dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
    );
    // grad(f, argnums=1)(x); argnums=(0, 0); argnums=()
    assert_eq!(
        msg(func::grad(f, 1)(&[x()])),
        "Got argnum=1, but only 1 positional inputs"
    );
    let r = func::grad(f, [0, 0])(&[x(), x()]).map(|[a, _]| a);
    assert_eq!(msg(r), "argnums elements must be unique, got (0, 0)");
    let r = func::grad(f, Vec::new())(&[x()]).map(|_| x());
    assert_eq!(msg(r), "argnums must be non-empty");
    // grad(f)(torch.tensor([1, 2]))
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert_eq!(
        msg(func::grad(f, 0)(&[ints.clone()])),
        "only Tensors of floating point dtype can require gradients"
    );
    // jvp(f, (x,), (x, x)); jvp(f, (x,), (ones(3),)) with x of 2 elements
    let sin = |a: &[Tensor]| a[0].sin();
    assert_eq!(
        msg(func::jvp(sin, &[x()], &[x(), x()]).map(|r| r.0)),
        "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure. \
         For example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with \
         structure TreeSpec(tuple, None, [*]) and tangents with structure TreeSpec(tuple, None, [*,\n  *])"
    );
    assert_eq!(
        msg(func::jvp(sin, &[t(&[1.0, 2.0], &[2])], &[x()]).map(|r| r.0)),
        "Trying to set a forward gradient that has a different size than that of the original Tensor, \
         this is not supported. Tensor is of size [2] while the given forward gradient is of size [3]."
    );
    assert_eq!(
        msg(func::jvp(sin, &[], &[]).map(|r| r.0)),
        "jvp(f, primals, tangents): Expected primals to contain at least one Tensor."
    );
    assert_eq!(
        msg(func::jacfwd(sin, 0)(&[ints])),
        "Expected primal to be floating point or complex, but got: torch.int64"
    );
    // vjp(lambda x: (x.sin(), x), x)[1](x); vjp(torch.sin, x)[1]((x, x))
    let two = |a: &[Tensor]| -> Result<(Tensor, Tensor)> { Ok((a[0].sin()?, a[0].clone())) };
    let (_, vjp_fn) = func::vjp(two, &[x()]).unwrap();
    assert_eq!(
        vjp_fn(&[x()]).unwrap_err().to_string(),
        "Expected pytree structure of cotangents to be the same as pytree structure of outputs to \
         the function. cotangents: *, primal output: (*, *)"
    );
    let (_, vjp_fn) = func::vjp(sin, &[x()]).unwrap();
    assert_eq!(
        vjp_fn(&[x(), x()]).unwrap_err().to_string(),
        "Expected pytree structure of cotangents to be the same as pytree structure of outputs to \
         the function. cotangents: (*, *), primal output: *"
    );
}

#[test]
fn vmap_errors_are_pytorchs() {
    let _serial = crate::serial();
    let add = |a: &[Tensor]| a[0].add(&a[1]);
    let y = Tensor::ones(&[3, 2], DType::F64).unwrap();
    let msg = |r: Result<Tensor>| r.unwrap_err().to_string();
    // vmap(f)(x, y) with sizes 3 and 3 along dim 0: x of 2 elements
    assert_eq!(
        msg(func::vmap(add, 0, 0)(&[t(&[1.0, 2.0], &[2]), y.clone()])),
        "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [2, 3] \
         for the mapped dimension"
    );
    assert_eq!(
        msg(func::vmap(add, [Some(0)], 0)(&[x(), y.clone()])),
        "vmap(f, in_dims=(0,), ...)(<inputs>): in_dims is not compatible with the structure of \
         `inputs`. in_dims has structure TreeSpec(tuple, None, [*]) but inputs has structure \
         TreeSpec(tuple, None, [*,\n  *])."
    );
    assert_eq!(
        msg(func::vmap(add, [Some(0), Some(2)], 0)(&[x(), y.clone()])),
        "vmap(f, in_dims=(0, 2), ...)(<inputs>): Got in_dim=2 for some input, but that input is a \
         Tensor of dimensionality 2 so expected in_dim to satisfy -2 <= in_dim < 2."
    );
    let id = |a: &[Tensor]| Ok(a[0].clone());
    assert_eq!(
        msg(func::vmap(id, [None], 0)(&[x()])),
        "vmap: Expected at least one Tensor to vmap over"
    );
    assert_eq!(
        msg(func::vmap(id, 0, 0)(&[])),
        "vmap(f)(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to \
         vmap over a function with no inputs. The latter is unsupported."
    );
    // vmap(lambda a: a, out_dims=1)(x)
    assert_eq!(
        msg(func::vmap(id, 0, 1)(&[x()])),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    let pair = |a: &[Tensor]| -> Result<(Tensor, Tensor)> { Ok((a[0].clone(), a[0].clone())) };
    assert_eq!(
        func::vmap(pair, 0, [Some(0)])(&[y.clone()])
            .map(|r| r.0)
            .unwrap_err()
            .to_string(),
        "vmap(f, ..., out_dims=(0,))(<inputs>): out_dims is not compatible with the structure of \
         `outputs`. out_dims has structure TreeSpec(tuple, None, [*]) but outputs has structure \
         TreeSpec(tuple, None, [*,\n  *])."
    );
    assert_eq!(
        func::vmap(pair, 0, [Some(0), None])(&[w()])
            .map(|r| r.0)
            .unwrap_err()
            .to_string(),
        "vmap(f, ...): `f` can not return a BatchedTensor when out_dim is None"
    );
    // No dual level is left open by a failed transform.
    assert!(forward_ad::dual_level().is_ok());
}
