"""``fluid.core``: the names Fluid scripts reach for in Paddle's C++ core module."""
from .errors import FluidError, PreconditionNotMet
from .tensor.place import (CPUPlace, CUDAPinnedPlace, CUDAPlace, cupy_module,  # noqa: F401
                         is_compiled_with_cuda)
from .exec.scope import Scope  # noqa: F401
from .tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows, Tensor  # noqa: F401
from .tensor.dtypes import VarType
from .reader.loader import EOFException  # noqa: F401
from .framework.desc import get_grad_op_desc  # noqa: F401
from .framework.desc import OpProtoAndCheckerMaker as op_proto_and_checker_maker  # noqa: F401

#: what Paddle's C++ checks raise; every error fluid_nb raises on purpose is one
EnforceNotMet = FluidError


class VarDesc:
    """``core.VarDesc.VarType.FP32`` and friends."""
    VarType = VarType


def get_cuda_device_count():
    """The number of GPUs CuPy sees (0 without CuPy or a usable GPU)."""
    try:
        return cupy_module().cuda.runtime.getDeviceCount()
    except PreconditionNotMet:
        return 0
