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

from .test_native_gemm import assert_numpys_products, compiled_mul


@pytest.mark.parametrize("choice", ["own", "blas"])
def test_a_compiled_product_goes_the_way_chosen_with_numpys_values(choice, monkeypatch):
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", choice)
    monkeypatch.setattr(build_module, "_small_gemm", [])
    # K past the runtime's 256-deep blocks, whose sums then differ from BLAS's in rounding
    program, feed, fetch, exe, scope = compiled_mul(7, 300, 40)
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    (spec,) = program._built.values()
    chosen = ctypes.c_int.in_dll(ctypes.CDLL(str(spec.library)), "fluid_small_gemm_by_blas")
    assert chosen.value == (choice == "blas")
    w = np.array(scope.find_var("w").get_tensor())
    assert_numpys_products(got, feed["x"], w)
    if choice == "blas":  # NumPy's own product is the same BLAS call: the same bits
        np.testing.assert_array_equal(got[0], feed["x"].dot(w))


def test_an_unknown_choice_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", "fastest")
    monkeypatch.setattr(build_module, "_small_gemm", [])
    with pytest.raises(PreconditionNotMet) as refused:
        compiled_mul(4, 8, 8)
    message = str(refused.value)
    assert "FLUID_NB_SMALL_GEMM" in message and "'own' or 'blas'" in message
    assert "'fastest'" in message


def test_a_first_program_without_products_still_finds_the_runtimes_timing(monkeypatch):
    # (its code calls nothing of the runtime library: the build names it all the same)
    monkeypatch.delenv("FLUID_NB_SMALL_GEMM", raising=False)
    monkeypatch.setattr(build_module, "_small_gemm", [])
    program = fluid.Program()
    block = program.global_block()
    for name in ("x", "y"):
        block.create_var(name=name, shape=[2, 3], dtype="float32")
    block.append_op(type="relu", inputs={"X": "x"}, outputs={"Out": "y"})
    feed = {"x": np.array([[-1, 2, -3], [4, -5, 6]], "float32")}
    compiled = native.compile(program, feed, ["y"], scope=fluid.Scope())
    (got,) = fluid.Executor(fluid.CPUPlace()).run(compiled, feed=feed, fetch_list=["y"],
                                                  scope=fluid.Scope())
    np.testing.assert_array_equal(got, np.maximum(feed["x"], 0))
    assert build_module._small_gemm in ([True], [False])  # the timing ran


def _sgemm_type(size):
    """CBLAS's sgemm with sizes of the C type ``size``."""
    return ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size,
                            ctypes.c_float, ctypes.c_void_p, size, ctypes.c_void_p, size,
                            ctypes.c_float, ctypes.c_void_p, size)


@pytest.mark.parametrize("size", [ctypes.c_int64, ctypes.c_int], ids=["ILP64", "LP64"])
def test_the_runtime_chooses_the_blas_where_it_is_faster_and_only_there(size, monkeypatch):
    monkeypatch.setenv("FLUID_NB_SMALL_GEMM", "own")
    monkeypatch.setattr(build_module, "_small_gemm", [])
    program = compiled_mul(8, 16, 16)[0]
    (spec,) = program._built.values()
    choose = ctypes.CDLL(str(spec.library)).fluid_small_gemm_choice
    choose.argtypes, choose.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
    wide = size is ctypes.c_int64
    calls = []
    # a "BLAS" that returns at once beats any product; one that takes a millisecond loses
    instant = _sgemm_type(size)(lambda *arguments: calls.append(arguments[3:6]))
    slow = _sgemm_type(size)(lambda *arguments: time.sleep(0.001))
    assert choose(ctypes.cast(instant, ctypes.c_void_p).value, wide) == 1
    assert choose(ctypes.cast(slow, ctypes.c_void_p).value, wide) == 0
    # each timed shape, nine times after two to warm up, its sizes as that BLAS takes them
    assert sorted(set(calls)) == [(32, 128, 128), (64, 96, 96), (128, 128, 32)]
    assert len(calls) == 3 * 11
