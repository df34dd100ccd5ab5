"""fluid_nb: PaddlePaddle Fluid rebuilt in Python for the notebook.

``import fluid_nb as fluid`` gives the Fluid 1.x API: ``fluid.Program``,
``fluid.program_guard``, ``fluid.layers``, ``fluid.Executor``, ``fluid.CPUPlace`` ...
"""
import sys

from . import fluid_paths
fluid_paths.install_finder()  # Fluid 1.x's module paths (fluid_nb.api.layers.nn ...)
from . import errors  # noqa: F401,E402
from .exec import (  # noqa: F401
    CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, LoDTensor, LoDTensorArray, Scope,
    SelectedRows, Tensor, cpu_places, create_lod_tensor, create_random_int_lodtensor,
    cuda_pinned_places, cuda_places, global_scope, is_compiled_with_cuda,
    lod_from_row_offsets, scope_guard)
from .framework import (  # noqa: F401
    Operator, Parameter, Program, Variable, default_main_program, default_startup_program,
    device_guard, name_scope, program_guard, unique_name)
from .framework.verify import verify  # noqa: F401
from .api import io  # noqa: F401
from .api import initializer, layers, nets, reader  # noqa: F401  (layers patches Variable ops)
from .api import clip, dataset, optimizer, regularizer  # noqa: F401
from .autodiff import backward  # noqa: F401
from .autodiff.backward import append_backward, gradients  # noqa: F401
from .api.data_feeder import DataFeeder  # noqa: F401
from .api.data_feed_desc import DataFeedDesc  # noqa: F401
from .rewriters.memory_optimize import memory_optimize, release_memory  # noqa: F401
from .rewriters.transpiler.ps_dispatcher import HashName, RoundRobin  # noqa: F401
from .rewriters import transpiler  # noqa: F401  (fluid.transpiler: the distribute transpiler)
from .rewriters.transpiler import DistributeTranspiler, DistributeTranspilerConfig  # noqa: F401
from .api.param_attr import ParamAttr, WeightNormParamAttr  # noqa: F401
from .api.initializer import force_init_on_cpu, init_on_cpu  # noqa: F401
from .api.layers.io import fluid_data as data  # noqa: F401  (fluid.data: checked feed shapes)
from .api import input  # noqa: F401
from .api.input import embedding, one_hot  # noqa: F401  (Fluid 1.6+: ids without a trailing 1)
from .api.training import LossHistory, train_loop  # noqa: F401
from . import flags, memory  # noqa: F401
from .api import average, compiler, install_check, metrics, profiler  # noqa: F401
from .api import contrib, evaluator  # noqa: F401  (fluid.contrib's RNNs, the evaluators)
from .api import default_scope_funcs, dygraph  # noqa: F401  (dygraph: refuses, see its docstring)
from .api.dygraph.nn import *  # noqa: F401,F403  (fluid.Layer, fluid.LayerNorm, ...: Fluid 1.8's
#                                        dygraph classes at top level, refusing when made)
from .rewriters import native, onnx  # noqa: F401  (the native code generator, ONNX export)
from . import distributed  # noqa: F401  (the RPC runtime: the send/recv ops' kernels)
from .api.compiler import (BuildStrategy, CompiledProgram, ExecutionStrategy,  # noqa: F401
                       ParallelExecutor)
from .flags import get_flags, set_flags  # noqa: F401
from .api.io import load, save  # noqa: F401
from .api.layers import learning_rate_scheduler as learning_rate_decay  # noqa: F401
from .api import core  # noqa: F401
from . import notebook  # noqa: F401  (rich display of programs, variables, tensors, scopes)
from .live.session import (disable_live, enable_live, feed, live, live_session,  # noqa: F401
                           live_step)
fluid_paths.bind_loaded(sys.modules[__name__])  # fluid.executor, fluid.unique_name, ...

__version__ = "0.1.0"

#: the Fluid release whose Python API fluid_nb implements (``require_version`` checks it)
FLUID_VERSION = "1.8.5"

# fluid.framework's runtime names (places): the framework package never imports the
# runtime, so they are attached from here, where both are loaded
from . import framework as _framework  # noqa: E402
for _name in ("cpu_places", "cuda_places", "cuda_pinned_places", "is_compiled_with_cuda"):
    setattr(_framework, _name, globals()[_name])
del _name


def in_dygraph_mode():
    """False: fluid_nb builds static programs (Fluid's imperative mode is not part of it)."""
    return False


def require_version(min_version, max_version=None):
    """Refuse to go on unless the Fluid API version fluid_nb implements (``FLUID_VERSION``)
    lies in ``[min_version, max_version]``; versions are dotted numbers like "1.6.0"."""
    def parsed(text, what):
        if not isinstance(text, str) or not all(p.isdigit() for p in text.split(".")):
            raise errors.InvalidType(errors.expected(
                "require_version", what, "a version string such as '1.6.0'", repr(text)))
        parts = [int(p) for p in text.split(".")]
        return parts + [0] * (4 - len(parts))
    have = parsed(FLUID_VERSION, "version")
    low = parsed(min_version, "min_version")
    high = parsed(max_version, "max_version") if max_version is not None else None
    if have < low or (high is not None and have > high):
        wanted = f">= {min_version}" + (f" and <= {max_version}" if max_version else "")
        raise errors.PreconditionNotMet(errors.expected(
            "require_version", "the Fluid version", wanted,
            f"{FLUID_VERSION} (the version of the Fluid API fluid_nb implements)"))


def load_op_library(lib_filename):
    """Fluid loads custom C++ operators from a shared library; fluid_nb's ops are Python
    definitions (``fluid_nb.framework.registry.def_op``), so a library cannot be loaded."""
    raise errors.Unimplemented(errors.expected(
        "load_op_library", "custom ops", "Python definitions (fluid_nb.framework.registry.def_op)",
        f"the C++ library {lib_filename!r}, which fluid_nb cannot load"))


def _jupyter_labextension_paths():
    """Where JupyterLab finds the prebuilt extension (``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "fluid-nb-labext"}]


def _jupyter_server_extension_points():
    """The Jupyter server extension: program files for the viewer, the viewer bundle."""
    return [{"module": "fluid_nb.server"}]


for _name in ("in_dygraph_mode", "require_version", "load_op_library", "set_flags",
              "get_flags"):
    setattr(_framework, _name, globals()[_name])
del _name


def load_ipython_extension(ipython):
    """``%load_ext fluid_nb``: the ``%%fluid`` and ``%fluid`` magics, and ``fluid`` (this
    package) in the user namespace."""
    import sys
    notebook.load_ipython_extension(ipython, sys.modules[__name__])
