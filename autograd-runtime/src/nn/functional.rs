//! Layers as functions (PyTorch's `torch.nn.functional`): losses, activations, dropout,
//! normalisation, convolution and pooling on plain tensors, for models written without modules.
