"""``fluid.core``: the names Fluid scripts reach for in Paddle's C++ core module."""
from .exec.place import CPUPlace, CUDAPinnedPlace, CUDAPlace, is_compiled_with_cuda  # noqa: F401
from .exec.scope import Scope  # noqa: F401
from .exec.tensor import LoDTensor, LoDTensorArray, SelectedRows, Tensor  # noqa: F401
from .framework.dtypes import VarType
from .reader.loader import EOFException  # noqa: F401


class VarDesc:
    """``core.VarDesc.VarType.FP32`` and friends."""
    VarType = VarType
