"""Fluid 1.x's module paths, each an alias of the module of fluid_nb that holds its names.

Fluid scripts import modules by the paths of ``paddle.fluid``'s source tree::

    from fluid_nb.executor import Executor, scope_guard
    import fluid_nb.layers.nn as nn
    from fluid_nb.transpiler import DistributeTranspiler

fluid_nb's own tree is arranged by layer (``api/``, ``autodiff/``, ``rewriters/``, ``exec/``
...), so a Fluid path names a module that lives elsewhere. ``FLUID_PATHS`` maps each Fluid
path to that real module, and :class:`FluidPathFinder` (first on ``sys.meta_path``, asked
only about those names) answers an import of a Fluid path, or of any module below one,
with the real module object itself: ``sys.modules["fluid_nb.layers.nn"] is
sys.modules["fluid_nb.api.layers.nn"]``. A module is therefore loaded once, under its real
name (its classes pickle by that name), and its import-time registrations (ops, the
operators layers patch onto Variable) happen once, whichever path imports it first.
"""
import importlib
import importlib.machinery
import importlib.util
import sys

__all__ = ["FLUID_PATHS", "FluidPathFinder", "real_name", "install_finder", "bind_loaded",
           "finish_submodules"]

#: Fluid 1.x module path -> the real module; modules below an aliased package follow it
#: (``fluid_nb.layers.nn`` -> ``fluid_nb.api.layers.nn``)
FLUID_PATHS = {
    # the Python API layer
    "fluid_nb.average": "fluid_nb.api.average",
    "fluid_nb.clip": "fluid_nb.api.clip",
    "fluid_nb.compiler": "fluid_nb.api.compiler",
    "fluid_nb.contrib": "fluid_nb.api.contrib",
    "fluid_nb.core": "fluid_nb.api.core",
    "fluid_nb.data_feed_desc": "fluid_nb.api.data_feed_desc",
    "fluid_nb.data_feeder": "fluid_nb.api.data_feeder",
    "fluid_nb.dataset": "fluid_nb.api.dataset",
    "fluid_nb.default_scope_funcs": "fluid_nb.api.default_scope_funcs",
    "fluid_nb.dygraph": "fluid_nb.api.dygraph",
    "fluid_nb.evaluator": "fluid_nb.api.evaluator",
    "fluid_nb.initializer": "fluid_nb.api.initializer",
    "fluid_nb.input": "fluid_nb.api.input",
    "fluid_nb.install_check": "fluid_nb.api.install_check",
    "fluid_nb.io": "fluid_nb.api.io",
    "fluid_nb.layer_helper": "fluid_nb.api.layer_helper",
    "fluid_nb.layers": "fluid_nb.api.layers",
    "fluid_nb.learning_rate_decay": "fluid_nb.api.layers.learning_rate_scheduler",
    "fluid_nb.metrics": "fluid_nb.api.metrics",
    "fluid_nb.nets": "fluid_nb.api.nets",
    "fluid_nb.op": "fluid_nb.api.op",
    "fluid_nb.optimizer": "fluid_nb.api.optimizer",
    "fluid_nb.paddle": "fluid_nb.api.paddle",
    "fluid_nb.parallel_executor": "fluid_nb.api.compiler",
    "fluid_nb.param_attr": "fluid_nb.api.param_attr",
    "fluid_nb.profiler": "fluid_nb.api.profiler",
    "fluid_nb.reader": "fluid_nb.api.reader",
    "fluid_nb.regularizer": "fluid_nb.api.regularizer",
    # below the API
    "fluid_nb.backward": "fluid_nb.autodiff.backward",
    "fluid_nb.executor": "fluid_nb.exec",  # Executor, global_scope, scope_guard, _fetch_var
    "fluid_nb.lod_tensor": "fluid_nb.tensor.tensor",
    "fluid_nb.transpiler": "fluid_nb.rewriters.transpiler",
    "fluid_nb.unique_name": "fluid_nb.framework.unique_name",
    # Paddle's namespace beside paddle.fluid: its reader and datasets are Fluid's own
    "fluid_nb.api.paddle.dataset": "fluid_nb.api.dataset",
    "fluid_nb.api.paddle.reader": "fluid_nb.api.reader",
}


def _one_step(fullname):
    head, dot, rest = fullname, "", ""
    while head:
        real = FLUID_PATHS.get(head)
        if real is not None:
            return real + dot + rest
        head, _, last = head.rpartition(".")
        rest = last + dot + rest
        dot = "."
    return None


def real_name(fullname):
    """The real module behind Fluid path ``fullname`` (None when it is not one); an alias
    may lead to another (``fluid_nb.paddle.dataset`` -> ``fluid_nb.api.paddle.dataset`` ->
    ``fluid_nb.api.dataset``)."""
    real = _one_step(fullname)
    while real is not None:
        further = _one_step(real)
        if further is None:
            return real
        real = further
    return None


class _AliasLoader:
    """Loads a Fluid path by importing the real module and handing over that object."""

    def __init__(self, real):
        self.real = real
        self.real_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.real)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system stamped the alias spec on the module; its identity (the spec
        # reload and runpy go by) stays the real one
        module.__spec__ = self.real_spec


#: package -> ``finish(module)``, called on each module of the package right after it loads
_FINISHERS = {}


def finish_submodules(package, finish):
    """Call ``finish(module)`` on each module of ``package`` (a name) right after it loads,
    whichever path imports it: ``fluid_nb.api.layers`` loads its modules lazily, and each
    must get its transactions and dtype checks before anything uses it."""
    _FINISHERS[package] = finish


class _FinishingLoader:
    """The usual loader of a module, then the module's package's ``finish``."""

    def __init__(self, loader, finish):
        self.loader = loader
        self.finish = finish

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.finish(module)

    def __getattr__(self, name):  # get_source, get_filename ... (inspect, linecache)
        return getattr(self.loader, name)


class FluidPathFinder:
    """Finds the Fluid paths of ``FLUID_PATHS`` (and modules below them), and the modules of
    the packages that ``finish_submodules`` names; nothing else."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("fluid_nb."):
            return None
        real = real_name(fullname)
        if real is None:
            finish = _FINISHERS.get(fullname.rpartition(".")[0])
            if finish is None:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _FinishingLoader(spec.loader, finish)
            return spec
        if importlib.util.find_spec(real) is None:
            return None  # no such module below the real package: the usual error follows
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


def install_finder():
    """Put the finder first on ``sys.meta_path``, once: after it, the path-based finder
    would load ``fluid_nb.layers.nn`` a second time from the real package's ``__path__``."""
    if not any(isinstance(finder, FluidPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, FluidPathFinder())


def bind_loaded(package):
    """Make each top-level Fluid path whose real module is loaded an attribute of
    ``package`` and an entry of ``sys.modules`` (``fluid.executor``, ``fluid.layers`` ...);
    the others (``fluid_nb.paddle``, ``fluid_nb.op``) load when first imported."""
    for alias, real in FLUID_PATHS.items():
        parent, _, name = alias.rpartition(".")
        module = sys.modules.get(real)
        if parent == package.__name__ and module is not None:
            sys.modules.setdefault(alias, module)
            setattr(package, name, module)
