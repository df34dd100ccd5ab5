"""Run time: places, tensors, scopes, the executor."""
from .executor import Executor  # noqa: F401
from .place import CPUPlace, CUDAPinnedPlace, CUDAPlace, is_compiled_with_cuda  # noqa: F401
from .scope import Scope, global_scope, scope_guard  # noqa: F401
from .tensor import (LoDTensor, LoDTensorArray, SelectedRows, Tensor, create_lod_tensor,  # noqa: F401
                     lod_from_row_offsets)
