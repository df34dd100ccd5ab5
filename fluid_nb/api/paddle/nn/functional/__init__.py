"""``paddle.nn.functional`` (Fluid 1.8): functions that add ops to the default main
program, taking their weights as arguments (``F.row_conv(x, w)``)."""
from . import activation, common, conv, extension  # noqa: F401
from .activation import hsigmoid, log_softmax, relu, sigmoid
from .common import interpolate
from .conv import conv2d, conv2d_transpose, conv3d, conv3d_transpose
from .extension import diag_embed, row_conv

__all__ = ["conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose", "hsigmoid", "relu",
           "sigmoid", "log_softmax", "row_conv", "diag_embed", "interpolate"]
