//! Optimizers, learning-rate schedulers and gradient clipping: PyTorch's `torch.optim`.
