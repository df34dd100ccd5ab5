"""fluid_nb: PaddlePaddle Fluid rebuilt in Python for the notebook.

``import fluid_nb as fluid`` gives the Fluid 1.x API: ``fluid.Program``,
``fluid.program_guard``, ``fluid.layers``, ``fluid.Executor``, ``fluid.CPUPlace`` ...
"""
import importlib
import sys

from . import fluid_paths
fluid_paths.install_finder()  # Fluid 1.x's module paths (fluid_nb.api.layers.nn ...)
from . import errors, flags  # noqa: F401,E402
from .exec import (  # noqa: F401,E402
    CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, LoDTensor, LoDTensorArray, Scope,
    SelectedRows, Tensor, cpu_places, create_lod_tensor, create_random_int_lodtensor,
    cuda_pinned_places, cuda_places, global_scope, is_compiled_with_cuda,
    lod_from_row_offsets, scope_guard)
from .framework import (  # noqa: F401,E402
    Operator, Parameter, Program, Variable, default_main_program, default_startup_program,
    device_guard, name_scope, program_guard, unique_name)
from .flags import get_flags, set_flags  # noqa: F401,E402
# fluid.layers' modules load as their layers are used; each loaded one is finished (its
# layers made transactions, given their dtype checks) whichever path imports it. Importing
# the package patches Variable's operators (``a + b``).


def _finish_layer_module(module):
    finish = getattr(sys.modules.get("fluid_nb.api.layers"), "finish_module", None)
    if finish is not None:  # (the package finishes those loaded while it loads itself)
        finish(module)


def _display_on_first_use(method):
    """A stand-in for a notebook representation (``_repr_html_``, ``_repr_mimebundle_``):
    its first call loads ``fluid_nb.notebook``, which puts the real ones on the classes,
    and answers with the real one. A program shown as a cell's result draws as it did when
    the package loaded its views at once."""
    def stand_in(self, *args, **kwargs):
        from . import notebook  # noqa: F401  (notebook.display.install replaces stand_in)
        real = getattr(type(self), method)
        if getattr(real, "_stand_in", False):
            return None  # (a class the notebook package shows no differently)
        return real(self, *args, **kwargs)
    stand_in.__name__ = method
    stand_in._stand_in = True
    return stand_in


for _shown in (Variable, Program, LoDTensor, Scope):
    for _method in ("_repr_html_", "_repr_mimebundle_"):
        if _method not in _shown.__dict__:
            setattr(_shown, _method, _display_on_first_use(_method))
del _shown, _method

fluid_paths.finish_submodules("fluid_nb.api.layers", _finish_layer_module)
from .api import layers  # noqa: F401,E402
fluid_paths.bind_loaded(sys.modules[__name__])  # fluid.executor, fluid.unique_name, ...
# kernels attached from above by modules that load with what uses them: the RPC runtime's
# when a program first runs one of its ops, the reader's when a reader is made or run
from .framework import registry as _registry  # noqa: E402
_registry.attach_kernels_on_demand(
    {op: lambda: importlib.import_module("fluid_nb.distributed") for op in (
        "send", "recv", "send_barrier", "fetch_barrier", "listen_and_serv",
        "distributed_lookup_table", "checkpoint_notify")})
_registry.attach_kernels_on_demand({"read": lambda: importlib.import_module(
    "fluid_nb.api.reader.loader")})

#: the rest of the namespace, loaded when first used (``fluid.optimizer``, ``fluid.onnx``,
#: ``fluid.DistributeTranspiler`` ...): name -> "module" (the module itself) or
#: "module:attribute"; Fluid's module paths (``fluid.layers``, ``fluid.io``) come from
#: ``fluid_paths.FLUID_PATHS``
_LAZY = {
    "api": "fluid_nb.api", "autodiff": "fluid_nb.autodiff", "distributed": "fluid_nb.distributed",
    "memory": "fluid_nb.memory", "native": "fluid_nb.rewriters.native",
    "notebook": "fluid_nb.notebook", "onnx": "fluid_nb.rewriters.onnx", "ops": "fluid_nb.ops",
    "proto": "fluid_nb.proto", "rewriters": "fluid_nb.rewriters", "tensor": "fluid_nb.tensor",
    "verify": "fluid_nb.framework.verify:verify",
    "append_backward": "fluid_nb.autodiff.backward:append_backward",
    "gradients": "fluid_nb.autodiff.backward:gradients",
    "DataFeeder": "fluid_nb.api.data_feeder:DataFeeder",
    "DataFeedDesc": "fluid_nb.api.data_feed_desc:DataFeedDesc",
    "memory_optimize": "fluid_nb.rewriters.memory_optimize:memory_optimize",
    "release_memory": "fluid_nb.rewriters.memory_optimize:release_memory",
    "HashName": "fluid_nb.rewriters.transpiler.ps_dispatcher:HashName",
    "RoundRobin": "fluid_nb.rewriters.transpiler.ps_dispatcher:RoundRobin",
    "DistributeTranspiler": "fluid_nb.rewriters.transpiler:DistributeTranspiler",
    "DistributeTranspilerConfig": "fluid_nb.rewriters.transpiler:DistributeTranspilerConfig",
    "ParamAttr": "fluid_nb.api.param_attr:ParamAttr",
    "WeightNormParamAttr": "fluid_nb.api.param_attr:WeightNormParamAttr",
    "force_init_on_cpu": "fluid_nb.api.initializer:force_init_on_cpu",
    "init_on_cpu": "fluid_nb.api.initializer:init_on_cpu",
    "data": "fluid_nb.api.layers.io:fluid_data",  # fluid.data: checked feed shapes
    "embedding": "fluid_nb.api.input:embedding",  # Fluid 1.6+: ids without a trailing 1
    "one_hot": "fluid_nb.api.input:one_hot",
    "LossHistory": "fluid_nb.api.training:LossHistory",
    "train_loop": "fluid_nb.api.training:train_loop",
    "BuildStrategy": "fluid_nb.api.compiler:BuildStrategy",
    "CompiledProgram": "fluid_nb.api.compiler:CompiledProgram",
    "ExecutionStrategy": "fluid_nb.api.compiler:ExecutionStrategy",
    "ParallelExecutor": "fluid_nb.api.compiler:ParallelExecutor",
    "load": "fluid_nb.api.io:load", "save": "fluid_nb.api.io:save",
    "disable_live": "fluid_nb.live.session:disable_live",
    "enable_live": "fluid_nb.live.session:enable_live",
    "feed": "fluid_nb.live.session:feed", "live": "fluid_nb.live.session:live",
    "live_session": "fluid_nb.live.session:live_session",
    "live_step": "fluid_nb.live.session:live_step",
}
# Fluid 1.8's dygraph classes at top level (fluid.Layer, fluid.LayerNorm ...), refusing
# when made (see fluid_nb.api.dygraph)
_LAZY.update((name, "fluid_nb.api.dygraph.nn:" + name) for name in (
    "Layer", "Linear", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "Pool2D",
    "BatchNorm", "Dropout", "Embedding", "GRUUnit", "LayerNorm", "NCE", "PRelu",
    "BilinearTensorProduct", "GroupNorm", "SpectralNorm", "TreeConv", "InstanceNorm"))
_FLUID_PATH_NAMES = tuple(alias.rpartition(".")[2] for alias in fluid_paths.FLUID_PATHS
                          if alias.rpartition(".")[0] == __name__)


def __getattr__(name):
    target = _LAZY.get(name)
    if target is not None:
        module_name, _, attribute = target.partition(":")
        value = importlib.import_module(module_name)
        if attribute:
            value = getattr(value, attribute)
    elif name in _FLUID_PATH_NAMES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    # (fluid_nb.op and fluid_nb.paddle: Fluid's modules, not names of its namespace)
    return sorted(set(globals()) | set(_LAZY) | set(_FLUID_PATH_NAMES) - {"op", "paddle"})


class _FluidPackage(type(sys)):
    """The package keeps ``fluid.live`` (the function) when the import system, on first
    loading a module of ``fluid_nb.live``, would set it to that package."""

    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, type(sys)) and \
                value.__name__ == f"{self.__name__}.{name}" and ":" in _LAZY[name]:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _FluidPackage


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
    from . import notebook
    notebook.load_ipython_extension(ipython, sys.modules[__name__])
