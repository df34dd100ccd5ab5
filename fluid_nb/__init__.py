"""fluid_nb: PaddlePaddle Fluid rebuilt in Python for the notebook.

``import fluid_nb as fluid`` gives the Fluid 1.x API: ``fluid.Program``,
``fluid.program_guard``, ``fluid.layers``, ``fluid.Executor``, ``fluid.CPUPlace`` ...
"""
from . import errors  # noqa: F401
from .exec import (  # noqa: F401
    CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, LoDTensor, LoDTensorArray, Scope,
    SelectedRows, Tensor, create_lod_tensor, global_scope, is_compiled_with_cuda, scope_guard)
from .framework import (  # noqa: F401
    Operator, Parameter, Program, Variable, default_main_program, default_startup_program,
    program_guard, unique_name)
from .framework.verify import verify  # noqa: F401
from . import io  # noqa: F401
from . import core  # noqa: F401

__version__ = "0.1.0"
