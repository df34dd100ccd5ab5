"""The layer classes of ``paddle.nn`` (Fluid 1.8), one module per kind."""
from . import activation, conv, extension, layers, loss, norm  # noqa: F401
from .activation import HSigmoid, LogSoftmax, ReLU, Sigmoid
from .layers import Layer
from .conv import Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose
from .extension import RowConv
from .loss import BCELoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .norm import InstanceNorm

__all__ = ["Layer", "ReLU", "Sigmoid", "LogSoftmax", "HSigmoid", "Conv2D", "Conv2DTranspose",
           "Conv3D", "Conv3DTranspose", "CrossEntropyLoss", "MSELoss", "L1Loss", "NLLLoss",
           "BCELoss", "RowConv", "InstanceNorm"]
