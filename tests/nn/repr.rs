//! Modules print as PyTorch 2.15's `print(model)` (the expected text below is its output for
//! the same model).

use autograd::nn::{
    AvgPool2d, Conv2d, Dropout, Embedding, Flatten, Gelu, GeluApproximate, Identity, LayerNorm,
    LeakyRelu, Linear, LogSoftmax, MaxPool2d, Module, Relu, Sequential, Sigmoid, Softmax, Tanh,
};

#[test]
fn modules_print_as_pytorchs_repr() -> autograd::Result<()> {
    // The layers draw their initial weights from the global generator: hold it, so that no
    // other test's draws interleave with these.
    let _rng = crate::common::global_rng(0);
    let model = Sequential::new()
        .add(Linear::new(4, 16)?)
        .add(Relu::new())
        .add(
            Sequential::new()
                .add(Tanh::new())
                .add(Linear::no_bias(16, 2)?),
        )
        .add(Conv2d::new(3, 16, 3)?.padding(1))
        .add(Conv2d::new(3, 8, (3, 5))?.stride(2).without_bias())
        .add(Dropout::new(0.5)?)
        .add(Embedding::new(10, 3)?)
        .add(Embedding::new(10, 3)?.with_padding_idx(0)?)
        .add(Flatten::new())
        .add(LayerNorm::new(&[4])?)
        .add(LayerNorm::with_options(&[2, 3], 1e-5, false)?)
        .add(MaxPool2d::new(2))
        .add(AvgPool2d::new(3).stride(1).padding(1))
        .add(Gelu::new())
        .add(Gelu::with_approximate(GeluApproximate::Tanh))
        .add(LeakyRelu::new(0.01))
        .add(Softmax::new(1))
        .add(LogSoftmax::new(-1))
        .add(Identity::new())
        .add(Sigmoid::new());
    let want = "\
Sequential(
  (0): Linear(in_features=4, out_features=16, bias=True)
  (1): ReLU()
  (2): Sequential(
    (0): Tanh()
    (1): Linear(in_features=16, out_features=2, bias=False)
  )
  (3): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (4): Conv2d(3, 8, kernel_size=(3, 5), stride=(2, 2), bias=False)
  (5): Dropout(p=0.5, inplace=False)
  (6): Embedding(10, 3)
  (7): Embedding(10, 3, padding_idx=0)
  (8): Flatten(start_dim=1, end_dim=-1)
  (9): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
  (10): LayerNorm((2, 3), eps=1e-05, elementwise_affine=False, bias=False)
  (11): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (12): AvgPool2d(kernel_size=3, stride=1, padding=1)
  (13): GELU(approximate='none')
  (14): GELU(approximate='tanh')
  (15): LeakyReLU(negative_slope=0.01)
  (16): Softmax(dim=1)
  (17): LogSoftmax(dim=-1)
  (18): Identity()
  (19): Sigmoid()
)";
    assert_eq!(model.to_string(), want);
    // Through a trait object too, and an empty container as PyTorch's `Sequential()`.
    let boxed: Box<dyn Module> = Box::new(Sequential::new());
    assert_eq!(boxed.to_string(), "Sequential()");
    Ok(())
}
