"""``fluid.core``: the names Fluid scripts reach for in Paddle's C++ core module."""
from ..errors import FluidError, PreconditionNotMet
from ..tensor.place import (CPUPlace, CUDAPinnedPlace, CUDAPlace, cupy_module,  # noqa: F401
                         is_compiled_with_cuda)
from ..exec.scope import Scope  # noqa: F401
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows, Tensor  # noqa: F401
from ..tensor.dtypes import VarType
from .reader.loader import EOFException  # noqa: F401
from ..framework.graph import Graph, ProgramDesc  # noqa: F401
from ..framework.desc import get_grad_op_desc  # noqa: F401
from ..framework.desc import OpProtoAndCheckerMaker as op_proto_and_checker_maker  # noqa: F401

#: what Paddle's C++ checks raise; every error fluid_nb raises on purpose is one
EnforceNotMet = FluidError


class VarDesc:
    """``core.VarDesc.VarType.FP32`` and friends."""
    VarType = VarType


def _set_eager_deletion_mode(threshold_gb, fraction, fast):
    """Fluid's switch for garbage collection during a run: FLAGS_eager_delete_tensor_gb
    (negative: off), FLAGS_memory_fraction_of_eager_deletion, FLAGS_fast_eager_deletion_mode."""
    from ..flags import set_flags
    set_flags({"FLAGS_eager_delete_tensor_gb": float(threshold_gb),
               "FLAGS_memory_fraction_of_eager_deletion": float(fraction),
               "FLAGS_fast_eager_deletion_mode": bool(fast)})


def get_cuda_device_count():
    """The number of GPUs CuPy sees (0 without CuPy or a usable GPU)."""
    try:
        return cupy_module().cuda.runtime.getDeviceCount()
    except PreconditionNotMet:
        return 0


def set_feed_variable(scope, tensor, var_name, index):
    """Put ``tensor`` in column ``index`` of the feed list variable ``var_name`` (what a
    ``feed`` op with ``col=index`` reads)."""
    holder = scope.var(var_name)
    if not isinstance(holder.value, list):
        holder.value = []
    feeds = holder.value
    feeds.extend([None] * (index + 1 - len(feeds)))
    feeds[index] = tensor


def get_fetch_variable(scope, var_name, index):
    """The tensor in column ``index`` of the fetch list variable ``var_name`` (what a
    ``fetch`` op with ``col=index`` wrote)."""
    holder = scope.find_var(var_name)
    fetched = holder.value if holder is not None else None
    if not isinstance(fetched, list) or not 0 <= index < len(fetched):
        raise PreconditionNotMet(f"get_fetch_variable: column {index} of fetch variable "
                                 f"'{var_name}' expected, but it holds {len(fetched or [])} "
                                 f"columns")
    return fetched[index]
