"""`import paddle` and `paddle.fluid.X` resolve to fluid_nb (measurement only).

Installed by the conftest the runner writes next to Paddle's test files: `paddle` is
`fluid_nb.api.paddle`, `paddle.fluid` is `fluid_nb`, `paddle.fluid.X` is `fluid_nb.X`, and
`paddle.fluid.tests.unittests` is the folder of copied test files. A `paddle.*` module
fluid_nb does not have imports as a stand-in whose every use raises NotImplementedError,
so a test file that merely imports it still runs its other tests (the tests that use it
fail and are counted). NumPy names that NumPy 2 dropped and Paddle 1.8's tests still use
are put back on NumPy for the test code.
"""
import importlib
import importlib.abc
import importlib.util
import inspect
import sys
import types

import numpy as np


class _Missing:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{self._name} is not in fluid_nb")

    def __mro_entries__(self, bases):
        raise NotImplementedError(f"{self._name} is not in fluid_nb")


class _MissingModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self.__name__}.{attr}")


class PaddleAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if (name == "paddle" or name.startswith("paddle.")) \
                and not name.startswith("paddle.fluid.tests"):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    @staticmethod
    def target(name):
        if name == "paddle":
            return "fluid_nb.api.paddle"
        if name == "paddle.fluid":
            return "fluid_nb"
        if name.startswith("paddle.fluid."):
            return "fluid_nb." + name[len("paddle.fluid."):]
        return "fluid_nb.api.paddle." + name[len("paddle."):]

    def create_module(self, spec):
        target = self.target(spec.name)
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as missing:
            if missing.name and (target == missing.name or target.startswith(missing.name + ".")):
                stand_in = _MissingModule(spec.name)
                stand_in.__path__ = []
                return stand_in
            raise

    def exec_module(self, module):
        pass


def _numpy_for_old_tests():
    for old, new in (("product", "prod"), ("cumproduct", "cumprod"), ("alltrue", "all"),
                     ("sometrue", "any"), ("bool", "bool_"), ("int", "int_"),
                     ("float", "float64"), ("complex", "complex128"), ("object", "object_"),
                     ("str", "str_"), ("long", "int_"), ("unicode", "str_")):
        if old not in np.__dict__:
            setattr(np, old, getattr(np, new))
    if "newshape" not in inspect.signature(np.reshape).parameters:
        reshape = np.reshape

        def reshape_with_newshape(a, *args, **kwargs):
            if "newshape" in kwargs:
                kwargs["shape"] = kwargs.pop("newshape")
            return reshape(a, *args, **kwargs)
        np.reshape = reshape_with_newshape


def _numpy1_scalar_comparisons():
    """Under NumPy 1, which Paddle 1.8's tests ran with, ``python_float - np.float32(x)`` is
    a float64; NumPy 2 (NEP 50) makes it a float32, so ``assertAlmostEqual(py, fetched[0])``
    would ask for a correctly rounded float32. The comparison is made as NumPy 1 made it."""
    import unittest
    if getattr(unittest.TestCase.assertAlmostEqual, "_numpy1", False):
        return
    original = unittest.TestCase.assertAlmostEqual

    def widened(value):
        return float(value) if isinstance(value, np.floating) else value

    def assert_almost_equal(self, first, second, *args, **kwargs):
        if isinstance(first, np.floating) != isinstance(second, np.floating):
            first, second = widened(first), widened(second)
        return original(self, first, second, *args, **kwargs)
    assert_almost_equal._numpy1 = True
    unittest.TestCase.assertAlmostEqual = assert_almost_equal
    unittest.TestCase.assertAlmostEquals = assert_almost_equal


def install(tests_folder):
    """Alias `paddle` to fluid_nb; `paddle.fluid.tests.unittests` is ``tests_folder``."""
    if not any(isinstance(finder, PaddleAlias) for finder in sys.meta_path):
        sys.meta_path.insert(0, PaddleAlias())
    import fluid_nb
    import fluid_nb.api.paddle
    fluid_nb.api.paddle.fluid = fluid_nb
    for package, folder in (("paddle.fluid.tests", tests_folder),
                            ("paddle.fluid.tests.unittests", tests_folder)):
        module = types.ModuleType(package)
        module.__path__ = [folder]
        sys.modules[package] = module
    _numpy_for_old_tests()
    _numpy1_scalar_comparisons()
