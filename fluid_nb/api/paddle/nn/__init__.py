"""``paddle.nn``: the layer classes and functions of Fluid 1.8's 2.0-preview API, in
static-graph mode.

A class is made once with its options (and creates its parameters then, in the default
main and startup programs); calling it adds its ops to the current block, like a
``fluid.layers`` function::

    import fluid_nb as fluid
    import fluid_nb.paddle as paddle
    import fluid_nb.paddle.nn.functional as F

    x = fluid.data(name="x", shape=[-1, 10], dtype="float64")
    label = fluid.data(name="label", shape=[-1], dtype="int64")
    loss = paddle.nn.NLLLoss(reduction="mean")(F.log_softmax(x), label)

``paddle.nn.Layer`` is the base to derive new layers from (``__init__`` creates the
parameters, ``forward`` adds the ops).
"""
from . import functional, layer  # noqa: F401
from .functional import (conv2d, conv2d_transpose, conv3d, conv3d_transpose,  # noqa: F401
                         diag_embed, hsigmoid, interpolate, log_softmax, relu, row_conv,
                         sigmoid)
from .layer import activation, conv, extension, loss, norm  # noqa: F401
from .layer import (BCELoss, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose,  # noqa: F401
                    CrossEntropyLoss, HSigmoid, InstanceNorm, L1Loss, Layer, LogSoftmax,
                    MSELoss, NLLLoss, ReLU, RowConv, Sigmoid)

__all__ = ["Layer", "ReLU", "Sigmoid", "LogSoftmax", "HSigmoid", "RowConv", "InstanceNorm",
           "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "CrossEntropyLoss",
           "MSELoss", "L1Loss", "NLLLoss", "BCELoss", "relu", "sigmoid", "log_softmax",
           "hsigmoid", "row_conv", "diag_embed", "interpolate", "conv2d", "conv2d_transpose",
           "conv3d", "conv3d_transpose"]
