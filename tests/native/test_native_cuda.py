"""The CUDA target: the generated ``.cu`` of the benchmark programs builds with nvcc wherever
nvcc exists (no GPU needed), and on a GPU (tests marked ``gpu``) runs and gives the
interpreter's values. W3 (a DynamicRNN, with LoD and a while loop) is generated and built
for CUDA; running such a program on a GPU is not done yet."""
import os
import shutil

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native.build import build

from .test_native_programs import (_feeds, _lod_batches, _programs, _recognize_digits,
                                   dynamic_rnn, fit_a_line, mlp)

HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")


def _lenet():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        prediction = _recognize_digits("conv")
    return main.clone(for_test=True), startup, prediction


PROGRAMS = {
    "W1_fit_a_line_sgd": lambda: (*_programs(fit_a_line),
                                  _feeds(fit_a_line, np.random.RandomState(0))),
    "W2_mlp_adam": lambda: (*_programs(mlp), _feeds(mlp, np.random.RandomState(0))),
    "lenet_inference": lambda: (*_lenet(), {"img": np.random.RandomState(0).rand(
        8, 1, 28, 28).astype("float32")}),
}


#: built, not run: their sizes are read at run time, which the CUDA target only generates
BUILT_ONLY = {"W3_dynamic_rnn_sgd": lambda: (*_programs(dynamic_rnn), _lod_batches(1)[0])}


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not installed")
@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(BUILT_ONLY))
def test_the_generated_cuda_builds_with_nvcc(name):
    main, startup, target, feed = {**PROGRAMS, **BUILT_ONLY}[name]()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    source = native.generate(main, target="cuda", feed=feed, fetch=[target], scope=scope)
    assert source.fallbacks == []
    assert '#include "fluid_native_cuda' in source.source
    assert all(function.startswith("fluid_cuda_") for _, function in source.functions)
    library, _ = build(source.source, target="cuda")
    assert library.exists() and library.suffix == ".so"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_cuda_gives_the_interpreters_values(name):
    main, startup, target, feed = PROGRAMS[name]()
    place = fluid.CUDAPlace(0)
    exe, host = fluid.Executor(place), fluid.Executor(fluid.CPUPlace())
    on_gpu, on_host = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=on_gpu)
    host.run(startup, scope=on_host)
    compiled = native.compile(main, feed, [target], scope=on_gpu, target="cuda")
    steps = 1 if name == "lenet_inference" else 20
    want = [host.run(main, feed=feed, fetch_list=[target], scope=on_host)[0]
            for _ in range(steps)]
    got = [exe.run(compiled, feed=feed, fetch_list=[target], scope=on_gpu)[0]
           for _ in range(steps)]
    np.testing.assert_allclose(np.concatenate([g.reshape(-1) for g in got]),
                               np.concatenate([w.reshape(-1) for w in want]),
                               rtol=1e-3, atol=1e-5)


def test_a_program_compiled_for_one_place_refuses_another():
    main, startup, loss = _programs(fit_a_line)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    compiled = native.compile(main, _feeds(fit_a_line, np.random.RandomState(0)), [loss],
                              scope=scope)
    from fluid_nb.testing.strict_device import StrictDevicePlace
    with pytest.raises(fluid.errors.InvalidArgument, match="compiled for 'cpp' expected "
                                                           "CPUPlace"):
        fluid.Executor(StrictDevicePlace()).run(compiled, feed={}, fetch_list=[loss],
                                                scope=scope)


def test_a_program_with_lod_is_not_run_on_a_gpu_yet():
    main, startup, loss = _programs(dynamic_rnn)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    with pytest.raises(fluid.errors.Unimplemented, match="generated and built, not run"):
        native.compile(main, _lod_batches(1)[0], [loss], scope=scope, target="cuda")
