"""CUDAPlace: without a GPU a typed error says what is missing and CuPy is never imported;
with one (tests marked ``gpu``), every op table and the model tests give the host's results
on CuPy."""
import subprocess
import sys

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import PreconditionNotMet
from fluid_nb.tensor.place import is_compiled_with_cuda

from tests.ops.op_test import all_table_cases, case_id, check_on_device
from tests.testing import test_models_on_strict_device as models

HAS_GPU = is_compiled_with_cuda()


@pytest.mark.skipif(HAS_GPU, reason="a GPU is visible: the error is for machines without one")
def test_a_cuda_place_without_a_gpu_is_a_typed_error_naming_what_is_missing():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        y = fluid.layers.scale(x, scale=2.0)
    assert fluid.is_compiled_with_cuda() is False
    with pytest.raises(PreconditionNotMet, match="CUDAPlace: (CuPy|a CUDA GPU) expected"):
        fluid.Executor(fluid.CUDAPlace(0)).run(
            main, feed={"x": np.ones((1, 2), "float32")}, fetch_list=[y])


def test_a_cpu_training_run_imports_no_cupy():
    code = ("import sys, numpy as np, fluid_nb as fluid\n"
            "x = fluid.layers.data(name='x', shape=[3], dtype='float32')\n"
            "loss = fluid.layers.mean(fluid.layers.fc(input=x, size=2))\n"
            "fluid.optimizer.SGD(0.1).minimize(loss)\n"
            "exe = fluid.Executor(fluid.CPUPlace())\n"
            "exe.run(fluid.default_startup_program())\n"
            "exe.run(feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[loss])\n"
            "print('cupy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"




@pytest.mark.gpu
@pytest.mark.parametrize("case", all_table_cases(), ids=case_id)
def test_every_op_table_case_on_cuda_matches_the_host(case):
    check_on_device(case, place=fluid.CUDAPlace(0))


@pytest.mark.gpu
@pytest.mark.parametrize("build, feed", [
    (models.mlp, lambda rng: {"img": rng.rand(64, 784).astype("float32"),
                              "label": rng.randint(0, 10, (64, 1)).astype("int64")}),
    (models.conv_net, lambda rng: {"img": rng.rand(8, 1, 12, 12).astype("float32"),
                                   "label": rng.randint(0, 10, (8, 1)).astype("int64")}),
    (models.dynamic_rnn, lambda rng: {"x": fluid.create_lod_tensor(
        rng.rand(sum(models.LENGTHS), 6).astype("float32"), [models.LENGTHS],
        fluid.CPUPlace())}),
], ids=["mlp_adam", "conv_bn_momentum", "dynamic_rnn"])
def test_training_curves_on_cuda_follow_the_host(build, feed):
    feed = feed(np.random.RandomState(0))
    on_host, _, _ = models.train(build, feed, fluid.CPUPlace(), steps=5)
    on_gpu, _, scope = models.train(build, feed, fluid.CUDAPlace(0), steps=5)
    np.testing.assert_allclose(on_gpu, on_host, rtol=1e-3)
    assert on_gpu[-1] < on_gpu[0]


@pytest.mark.gpu
def test_live_mode_on_cuda():
    import cupy
    from fluid_nb.live import live
    x_value = np.arange(6, dtype="float32").reshape(2, 3) / 10
    with fluid.unique_name.guard(), live("gpu-live", place=fluid.CUDAPlace(0)) as session:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=x_value)
        h = fluid.layers.fc(input=x, size=4, act="relu")
    weight = session.scope.find_var("fc_0.w_0").get_tensor()
    assert isinstance(weight.array, cupy.ndarray)
    w, b = np.array(weight), np.array(session.scope.find_var("fc_0.b_0").get_tensor())
    np.testing.assert_allclose(h.numpy(), np.maximum(x_value @ w + b, 0), rtol=1e-5)


ADAM_STATE = {"Param": "param", "Moment1": "moment1", "Moment2": "moment2",
              "Beta1Pow": "beta1_pow", "Beta2Pow": "beta2_pow"}


def _adam_once(place, dtype, in_place):
    """One adam op over random state on ``place``: {output variable: its value on the host}."""
    rng = np.random.RandomState(3)
    values = {"param": rng.randn(300, 7), "grad": rng.randn(300, 7),
              "moment1": rng.randn(300, 7) * 0.1, "moment2": rng.rand(300, 7) * 0.01,
              "lr": [0.01], "beta1_pow": [0.9 ** 3], "beta2_pow": [0.999 ** 3]}
    main = fluid.Program()
    block = main.global_block()
    for name, value in values.items():
        block.create_var(name=name, shape=np.shape(value), dtype=dtype, persistable=True)
    outputs = {slot + "Out": name if in_place else name + "_out"
               for slot, name in ADAM_STATE.items()}
    for name in outputs.values():
        block.create_var(name=name, dtype=dtype, persistable=True)
    block.append_op(type="adam", inputs={"Grad": "grad", "LearningRate": "lr", **ADAM_STATE},
                    outputs=outputs, attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})
    scope = fluid.Scope()
    for name, value in values.items():
        scope.var(name).get_tensor().set(np.asarray(value, dtype), place)
    fluid.Executor(place).run(main, scope=scope)
    return {name: np.array(scope.find_var(name).get_tensor()) for name in outputs.values()}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("in_place", [True, False], ids=["in_place", "new_arrays"])
def test_adam_on_cuda_is_one_kernel_with_the_hosts_values_bit_for_bit(dtype, in_place):
    # the device runs adam_step, the element update the host's fused loop runs, with no FMA
    # contraction: the same roundings in the same order
    import cupy
    from fluid_nb.ops import common
    on_host = _adam_once(fluid.CPUPlace(), dtype, in_place)
    common._compiled.pop((cupy, "fluid_adam_step"), None)
    on_gpu = _adam_once(fluid.CUDAPlace(0), dtype, in_place)
    assert (cupy, "fluid_adam_step") in common._compiled
    for name, value in on_host.items():
        np.testing.assert_array_equal(on_gpu[name], value, err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_hard_labels_on_cuda_are_masked_by_one_kernel(dtype):
    # ignore_index and ids out of range do not count on a device (no host copy to check)
    # and index row 0; the kernel gives the masks the array expressions gave
    import cupy
    from fluid_nb.ops import common, loss
    label = cupy.asarray([[3], [-100], [7], [-1], [0]], dtype)
    common._compiled.pop((cupy, "fluid_hard_label_rows"), None)
    keep, safe = loss._hard_rows("softmax_with_cross_entropy", cupy, label, 5, -100)
    assert (cupy, "fluid_hard_label_rows") in common._compiled
    assert keep.tolist() == [True, False, False, False, True]
    assert safe.dtype == np.int64 and safe.tolist() == [3, 0, 0, 0, 0]
