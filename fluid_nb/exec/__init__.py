"""Run time: places, tensors, scopes, the executor (Fluid's ``fluid.executor`` path)."""
from .executor import Executor  # noqa: F401
from ..tensor.place import (CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places,  # noqa: F401
                    cuda_pinned_places, cuda_places, is_compiled_with_cuda)
from .scope import Scope, _fetch_var, global_scope, scope_guard  # noqa: F401
from ..tensor.tensor import (LoDTensor, LoDTensorArray, SelectedRows, Tensor, create_lod_tensor,  # noqa: F401
                     create_random_int_lodtensor, lod_from_row_offsets)
from . import control_flow  # noqa: F401  (attaches the control-flow ops' kernels)
