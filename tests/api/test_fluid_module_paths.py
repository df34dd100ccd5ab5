"""Fluid 1.x scripts import modules by the paths of paddle.fluid's tree; each such path is
an alias of the one real module of fluid_nb that holds its names (fluid_nb.fluid_paths)."""
import importlib
import pickle
import subprocess
import sys

import pytest

import fluid_nb
from fluid_nb.fluid_paths import FLUID_PATHS, real_name

#: the module paths of Fluid 1.x that scripts import, each with a name it must hold
FLUID_MODULE_NAMES = {
    "fluid_nb.executor": "Executor",
    "fluid_nb.lod_tensor": "create_lod_tensor",
    "fluid_nb.unique_name": "guard",
    "fluid_nb.parallel_executor": "ParallelExecutor",
    "fluid_nb.core": "Scope",
    "fluid_nb.op": "Operator",
    "fluid_nb.default_scope_funcs": "enter_local_scope",
    "fluid_nb.layers": "fc",
    "fluid_nb.layers.nn": "fc",
    "fluid_nb.layers.io": "data",
    "fluid_nb.layers.control_flow": "While",
    "fluid_nb.layers.learning_rate_scheduler": "exponential_decay",
    "fluid_nb.optimizer": "SGD",
    "fluid_nb.backward": "append_backward",
    "fluid_nb.io": "save_inference_model",
    "fluid_nb.initializer": "Constant",
    "fluid_nb.param_attr": "ParamAttr",
    "fluid_nb.regularizer": "L2Decay",
    "fluid_nb.clip": "GradientClipByGlobalNorm",
    "fluid_nb.nets": "simple_img_conv_pool",
    "fluid_nb.metrics": "Accuracy",
    "fluid_nb.evaluator": "ChunkEvaluator",
    "fluid_nb.average": "WeightedAverage",
    "fluid_nb.compiler": "CompiledProgram",
    "fluid_nb.profiler": "profiler",
    "fluid_nb.data_feeder": "DataFeeder",
    "fluid_nb.contrib": "basic_lstm",
    "fluid_nb.contrib.layers": "basic_gru",
    "fluid_nb.dygraph": "guard",
    "fluid_nb.transpiler": "DistributeTranspiler",
    "fluid_nb.transpiler.ps_dispatcher": "RoundRobin",
    "fluid_nb.layer_helper": "LayerHelper",
    "fluid_nb.learning_rate_decay": "exponential_decay",
    "fluid_nb.install_check": "run_check",
    "fluid_nb.data_feed_desc": "DataFeedDesc",
    "fluid_nb.framework": "Program",
    "fluid_nb.reader": "shuffle",
    "fluid_nb.dataset": "mnist",
    "fluid_nb.dataset.uci_housing": "train",
    "fluid_nb.input": "one_hot",
    "fluid_nb.paddle": "batch",
    "fluid_nb.paddle.dataset.mnist": "train",
}


@pytest.mark.parametrize("path", sorted(FLUID_MODULE_NAMES))
def test_a_fluid_module_path_imports_and_holds_its_names(path):
    module = importlib.import_module(path)
    assert hasattr(module, FLUID_MODULE_NAMES[path])
    assert sys.modules[path] is module


@pytest.mark.parametrize("alias", sorted(FLUID_PATHS))
def test_an_alias_is_the_real_module_itself(alias):
    real = importlib.import_module(FLUID_PATHS[alias])
    assert importlib.import_module(alias) is real
    assert real.__name__ == FLUID_PATHS[alias]  # known by its real name, once
    assert real.__spec__.name == FLUID_PATHS[alias]


def test_a_module_below_an_aliased_package_is_the_real_submodule():
    import fluid_nb.layers.nn as nn
    import fluid_nb.api.layers.nn as real_nn
    assert nn is real_nn
    assert sys.modules["fluid_nb.layers.nn"] is sys.modules["fluid_nb.api.layers.nn"]
    assert fluid_nb.layers.nn is real_nn and fluid_nb.layers is fluid_nb.api.layers


def test_from_imports_of_fluid_paths():
    from fluid_nb.executor import Executor, _fetch_var, global_scope, scope_guard
    from fluid_nb.lod_tensor import create_lod_tensor, create_random_int_lodtensor
    from fluid_nb.unique_name import generate, guard, switch
    from fluid_nb.parallel_executor import ParallelExecutor
    from fluid_nb.core import LoDTensor, Scope, VarDesc
    from fluid_nb.layers.nn import fc
    assert Executor is fluid_nb.Executor and global_scope is fluid_nb.global_scope
    assert scope_guard is fluid_nb.scope_guard and callable(_fetch_var)
    assert create_lod_tensor is fluid_nb.create_lod_tensor and callable(create_random_int_lodtensor)
    assert generate is fluid_nb.unique_name.generate and callable(guard) and callable(switch)
    assert ParallelExecutor is fluid_nb.ParallelExecutor and fc is fluid_nb.layers.fc
    assert Scope is fluid_nb.Scope and LoDTensor is fluid_nb.LoDTensor
    assert VarDesc.VarType.FP32 == fluid_nb.core.VarDesc.VarType.FP32


def test_fluid_paths_are_attributes_of_the_package():
    for path in ("executor", "unique_name", "layers", "optimizer", "backward", "io", "core",
                 "transpiler", "learning_rate_decay", "lod_tensor", "parallel_executor"):
        assert getattr(fluid_nb, path) is sys.modules[f"fluid_nb.{path}"]
    assert fluid_nb.native is sys.modules["fluid_nb.rewriters.native"]
    assert fluid_nb.onnx is sys.modules["fluid_nb.rewriters.onnx"]
    assert callable(fluid_nb.memory_optimize)


def test_a_name_that_is_no_fluid_path_is_not_found():
    assert real_name("fluid_nb.layers.nn") == "fluid_nb.api.layers.nn"
    assert real_name("fluid_nb.layersx") is None and real_name("fluid_nb.api.layers") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("fluid_nb.layers.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("fluid_nb.no_such_module")


def test_a_class_pickles_by_its_real_module():
    from fluid_nb.param_attr import ParamAttr
    attr = pickle.loads(pickle.dumps(ParamAttr(name="w", learning_rate=0.5)))
    assert type(attr) is ParamAttr and type(attr).__module__ == "fluid_nb.api.param_attr"
    assert attr.name == "w" and attr.learning_rate == 0.5


def test_a_fluid_path_imported_first_registers_once():
    """In a fresh interpreter, importing the Fluid path before the real one loads the
    module once: the alias and the real name are one object and each layer function and op
    exists once."""
    code = ("import sys\nimport fluid_nb.layers.nn as a\nimport fluid_nb.api.layers.nn as b\n"
            "assert a is b\n"
            "names = ['fluid_nb.layers.nn', 'fluid_nb.api.layers.nn']\n"
            "assert len({id(sys.modules[m]) for m in names}) == 1, names\n"
            "from fluid_nb.framework import registry\n"
            "assert 'relu' in registry.all_ops()\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
