"""``import fluid_nb`` loads what the namespace needs at once (framework, executor, places)
and nothing else: op families load when one of their ops is looked up, layer modules when
one of their layers is used, the rest of the namespace (optimizers, ONNX, native code, the
datasets, the RPC runtime, the notebook) when first touched. Every name stays reachable by
every path, and the indexes that say where a name lives agree with the modules."""
import json
import subprocess
import sys

from fluid_nb.api import layers as layers_package
from fluid_nb.api.layers import LAYER_NAMES
from fluid_nb.ops import _families
from fluid_nb.ops._index import API_KEYS, OPS_BY_MODULE

OP_MODULES = _families.ungrouped(OPS_BY_MODULE)


def fresh(code):
    """What ``code`` prints as JSON on its last line, run in a new interpreter."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


HEAVY = ["fluid_nb.rewriters.onnx", "fluid_nb.rewriters.native", "fluid_nb.api.dataset",
         "fluid_nb.distributed", "grpc", "fluid_nb.notebook", "fluid_nb.widgets",
         "fluid_nb.live", "fluid_nb.api.optimizer", "fluid_nb.api.io",
         "fluid_nb.rewriters.transpiler", "fluid_nb.api.layers.nn",
         "fluid_nb.api.layers.detection_heads", "fluid_nb.ops.activation", "fluid_nb.ops.nn",
         "fluid_nb.ops.detection", "cupy"]


def test_importing_fluid_nb_loads_none_of_the_heavy_parts():
    loaded = fresh(
        "import json, sys\n"
        "import fluid_nb\n"
        "from fluid_nb.framework import registry\n"
        f"print(json.dumps([[m for m in {HEAVY!r} if m in sys.modules],\n"
        "                  len(registry._OPS), hasattr(fluid_nb.Variable, '__add__')]))\n")
    heavy, defined, patched = loaded
    assert heavy == []
    assert defined < 20  # the control-flow ops, which the executor gives kernels
    assert patched  # a + b on Variables works from the import on


def test_a_program_or_variable_shown_in_a_notebook_loads_its_representation_then():
    shown = fresh(
        "import json, sys\n"
        "import fluid_nb as fluid\n"
        "before = 'fluid_nb.notebook' in sys.modules\n"
        "bundle = fluid.default_main_program()._repr_mimebundle_()\n"
        "x = fluid.layers.data(name='x', shape=[3], dtype='float32')\n"
        "print(json.dumps([before, sorted(bundle), 'fluid-nb' in x._repr_html_(),\n"
        "                  'fluid_nb.notebook' in sys.modules]))\n")
    before, mime_types, variable_html, after = shown
    assert not before and after
    assert "application/vnd.fluid-nb.program+json" in mime_types and "text/html" in mime_types
    assert variable_html


def test_a_lookup_defines_its_op_and_all_ops_defines_every_op():
    found = fresh(
        "import json, sys\n"
        "from fluid_nb.framework import registry\n"
        "relu = registry.get('relu').type\n"
        "decoded = 'fluid_nb.ops.activation' in sys.modules\n"
        "before = 'fluid_nb.ops.detection' in sys.modules\n"
        "print(json.dumps([relu, decoded, before, len(registry.all_ops())]))\n")
    assert found == ["relu", True, False, len(OP_MODULES)]


def test_an_mlp_trained_with_adam_defines_no_convolution_or_normalization_op():
    """An op module loads for its own ops (through the op index), not because a module of
    another family was loaded: an MLP's training program needs neither conv2d nor
    batch_norm, and the memory their records take (500 W2 steps peak RSS) stays free."""
    loaded = fresh(
        "import json, sys\n"
        "import numpy as np\n"
        "import fluid_nb as fluid\n"
        "main, startup = fluid.Program(), fluid.Program()\n"
        "with fluid.program_guard(main, startup):\n"
        "    img = fluid.layers.data(name='img', shape=[8], dtype='float32')\n"
        "    lab = fluid.layers.data(name='label', shape=[1], dtype='int64')\n"
        "    h = fluid.layers.fc(input=img, size=4, act='relu')\n"
        "    logits = fluid.layers.fc(input=h, size=3)\n"
        "    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, lab))\n"
        "    fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)\n"
        "exe = fluid.Executor(fluid.CPUPlace())\n"
        "exe.run(startup)\n"
        "exe.run(main, feed={'img': np.ones((2, 8), 'float32'),\n"
        "                    'label': np.zeros((2, 1), 'int64')}, fetch_list=[loss])\n"
        "print(json.dumps([m for m in ('fluid_nb.ops.conv', 'fluid_nb.ops.norm')\n"
        "                  if m in sys.modules]))\n")
    assert loaded == []


def test_the_ops_a_network_runs_load_neither_numpys_random_draws_nor_pathlib():
    """numpy.random (with the hashing modules it brings) and pathlib (with urllib and
    ipaddress) hold some 7 MB of a process between them: defining relu, softmax, dropout and
    Adam loads neither. A dropout's first draw, or an initializer's, loads numpy.random."""
    loaded = fresh(
        "import json, sys\n"
        "from fluid_nb.framework import registry\n"
        "for op in ('relu', 'softmax', 'dropout', 'mul', 'adam', 'momentum', 'sgd'):\n"
        "    registry.get(op)\n"
        "print(json.dumps([m for m in ('numpy.random', 'pathlib') if m in sys.modules]))\n")
    assert loaded == []


def test_every_name_of_the_namespace_is_reachable_by_every_path():
    found = fresh(
        "import json, types\n"
        "import fluid_nb as fluid\n"
        "from fluid_nb.layers import fc\n"
        "import fluid_nb.layers.nn as nn\n"
        "from fluid_nb.transpiler import DistributeTranspiler\n"
        "import fluid_nb.live.session\n"
        "import fluid_nb.api.layers.rnn\n"
        "missing = [n for n in dir(fluid) if not hasattr(fluid, n)]\n"
        "missing += [n for n in fluid.layers.__all__ if not hasattr(fluid.layers, n)]\n"
        "star = {}\n"
        "exec('from fluid_nb.layers import *', star)\n"
        "missing += sorted(set(fluid.layers.__all__) - set(star))\n"
        "print(json.dumps([missing, fc is fluid.layers.fc is nn.fc,\n"
        "    DistributeTranspiler is fluid.DistributeTranspiler,\n"
        "    isinstance(fluid.live, types.FunctionType),\n"
        "    isinstance(fluid.layers.rnn, types.FunctionType),\n"
        "    fluid.data is fluid.layers.io.fluid_data]))\n")
    assert found == [[], True, True, True, True, True]


def test_a_layer_module_is_finished_whichever_path_loads_it():
    """Transactions and dtype checks: on the module's own functions, imported directly."""
    found = fresh(
        "import json\n"
        "import fluid_nb.layers.nn as nn\n"
        "from fluid_nb.api.layers.io import fluid_data\n"
        "print(json.dumps([getattr(nn.fc, '__wrapped_transaction__', False),\n"
        "    getattr(fluid_data, '__wrapped_transaction__', False),\n"
        "    hasattr(nn.conv2d, '__wrapped_dtypes__')]))\n")
    assert found == [True, True, True]


def test_the_op_index_is_what_the_op_modules_define():
    index, api = _families.survey()
    assert list(index.items()) == list(OP_MODULES.items())  # (the order too)
    assert api == API_KEYS


def test_every_op_module_is_listed():
    import importlib
    import pkgutil

    import fluid_nb.ops
    from fluid_nb.framework import registry
    for module in pkgutil.iter_modules(fluid_nb.ops.__path__):
        importlib.import_module(f"fluid_nb.ops.{module.name}")
    defining = {name.rpartition(".")[2] for name in registry._DEFINED_IN.values()
                if name and name.startswith("fluid_nb.ops.")}
    assert defining - set(_families.MODULES) == set()


def test_the_layer_name_index_is_what_the_layer_modules_list():
    assert list(layers_package.name_index().items()) == list(LAYER_NAMES.items())


def test_a_kernel_attached_from_above_loads_its_module_when_first_wanted():
    found = fresh(
        "import json, sys\n"
        "import fluid_nb\n"
        "from fluid_nb.framework import registry\n"
        "before = 'fluid_nb.distributed' in sys.modules\n"
        "send = registry.get('send').kernel_for('cpu').__module__\n"
        "read = registry.get('read').kernel_for('cpu').__module__\n"
        "print(json.dumps([before, send, read]))\n")
    assert found == [False, "fluid_nb.distributed.kernels", "fluid_nb.api.reader.loader"]
