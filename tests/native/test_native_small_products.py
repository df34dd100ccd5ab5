"""A compiled program's small float products (at most 2^20 multiply-adds) run where they
run faster on this machine: the runtime library's own product (runtime/fluid_native_gemm.h)
or the BLAS NumPy loaded, whose small-matrix kernels (an OpenBLAS on an AVX-512 core) run
them on the calling thread too. The loader times both once a process and sets each
program's choice; ``FLUID_NB_SMALL_GEMM=own`` or ``blas`` decides instead. Either way a
product and its gradients are NumPy's to float32 rounding."""
import ctypes
import time

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import PreconditionNotMet
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native import build as build_module


def _compiled_mul(rows, inner, columns):
    """(the compiled program, its feed, fetch list, executor, scope) of X W, its mean
    square and the gradients of both."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[inner], dtype="float32")
        x.stop_gradient = False
        w = fluid.layers.create_parameter([inner, columns], "float32", name="w")
        out = fluid.layers.mul(x, w)
        loss = fluid.layers.mean(fluid.layers.square(out))
        fluid.backward.append_backward(loss)
    feed = {"x": np.random.RandomState(rows).uniform(-1, 1, (rows, inner)).astype("float32")}
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    fetch = [out, "x@GRAD", "w@GRAD"]
    return native.compile(main, feed, fetch, scope=scope), feed, fetch, exe, scope


@pytest.mark.parametrize("choice", ["own", "blas"])
def test_a_compiled_product_goes_the_way_chosen_with_numpys_values(choice, monkeypatch):
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", choice)
    monkeypatch.setattr(build_module, "_small_gemm", [])
    program, feed, fetch, exe, scope = _compiled_mul(32, 128, 128)
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    (spec,) = program._built.values()
    chosen = ctypes.c_int.in_dll(ctypes.CDLL(str(spec.library)), "fluid_small_gemm_by_blas")
    assert chosen.value == (choice == "blas")
    x = feed["x"].astype("float64")
    w = np.asarray(scope.find_var("w").get_tensor()).astype("float64")
    product = x @ w
    dout = 2 * product / product.size
    for g, want, name in zip(got, [product, dout @ w.T, x.T @ dout], ["Out", "X@GRAD", "Y@GRAD"]):
        np.testing.assert_allclose(g, want, rtol=0, atol=np.max(np.abs(want)) * 128 * 2e-7 + 1e-7,
                                   err_msg=name)


def test_an_unknown_choice_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", "fastest")
    monkeypatch.setattr(build_module, "_small_gemm", [])
    with pytest.raises(PreconditionNotMet) as refused:
        _compiled_mul(4, 8, 8)
    message = str(refused.value)
    assert "FLUID_NB_SMALL_GEMM" in message and "'own' or 'blas'" in message
    assert "'fastest'" in message


# the BLAS's sgemm as the runtime calls it (ILP64 sizes: NumPy's scipy-openblas64)
_SGEMM = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                          ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                          ctypes.c_void_p, ctypes.c_int64)


def test_the_runtime_chooses_the_blas_where_it_is_faster_and_only_there(monkeypatch):
    assert build_module.blas()[2] == "int64_t", "this test's sgemm type is ILP64's"
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", "own")
    monkeypatch.setattr(build_module, "_small_gemm", [])
    program = _compiled_mul(8, 16, 16)[0]
    (spec,) = program._built.values()
    choose = ctypes.CDLL(str(spec.library)).fluid_small_gemm_choice
    choose.argtypes, choose.restype = [ctypes.c_void_p], ctypes.c_int
    calls = []
    # a "BLAS" that returns at once beats any product; one that takes a millisecond loses
    instant = _SGEMM(lambda *arguments: calls.append(arguments[3:6]))
    slow = _SGEMM(lambda *arguments: time.sleep(0.001))
    assert choose(ctypes.cast(instant, ctypes.c_void_p).value) == 1
    assert choose(ctypes.cast(slow, ctypes.c_void_p).value) == 0
    # each timed shape, nine times after two to warm up
    assert sorted(set(calls)) == [(32, 128, 128), (64, 96, 96), (128, 128, 32)]
    assert len(calls) == 3 * 11
