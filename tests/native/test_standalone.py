"""``fluid-nb compile``: a saved inference model becomes self-contained C++ (or CUDA) and a
binary that reads Paddle's parameter files and .npy inputs, with no Python, and predicts what
the interpreter does. The CUDA program builds wherever nvcc is; it runs on a GPU (tests
marked ``gpu``) and, without one, says so and exits with status 3."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.cli import main as cli

from fluid_nb.tensor.place import is_compiled_with_cuda

from .test_native_programs import _recognize_digits

HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")


def run(binary, *arguments, timeout=60):
    """The built program run on ``arguments``: its exit status and stderr."""
    return subprocess.run([str(binary), *map(str, arguments)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    """The book's LeNet saved both ways (a file per parameter, and one combined file),
    an input batch and the interpreter's prediction for it."""
    root = tmp_path_factory.mktemp("lenet")
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 6
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        prediction = _recognize_digits("conv")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    images = np.random.RandomState(0).rand(4, 1, 28, 28).astype("float32")
    with fluid.scope_guard(scope):
        for name, params in (("dir", None), ("combined", "__params__")):
            fetched, = fluid.io.save_inference_model(str(root / name), ["img"], [prediction],
                                                     exe, main_program=main,
                                                     params_filename=params)
        want, = exe.run(main.clone(for_test=True), feed={"img": images},
                        fetch_list=[prediction])
    np.save(root / "img.npy", images)
    source, binary = root / "lenet.cc", root / "lenet"
    assert cli(["compile", str(root / "dir"), "--feed", f"img={root / 'img.npy'}",
                "-o", str(source), "--binary", str(binary)]) == 0
    return root, source, binary, want, fetched.replace("/", "_")  # the saved fetch's name


@pytest.mark.parametrize("params", ["dir", "combined/__params__"])
def test_the_binary_predicts_what_the_interpreter_does(lenet, params, tmp_path):
    root, _, binary, want, name = lenet
    done = run(binary, root / params, root / "img.npy", tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("given", ["combined", "combined/__model__", "dir/__model__", "v2",
                                   "v2/model.pdmodel", "v2/model", "v2/model.pdiparams"])
def test_the_binary_takes_the_model_paths_compile_takes(lenet, given, tmp_path):
    """PARAMS may name the model as ``fluid-nb compile`` does (its folder, x.pdmodel, the
    prefix x, __model__), not only the parameter file."""
    root, _, binary, want, name = lenet
    v2 = root / "v2"
    if not v2.exists():  # Paddle 2.x's layout: model.pdmodel + model.pdiparams
        v2.mkdir()
        shutil.copy(root / "combined" / "__model__", v2 / "model.pdmodel")
        shutil.copy(root / "combined" / "__params__", v2 / "model.pdiparams")
    done = run(binary, root / given, root / "img.npy", tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), want, rtol=1e-5, atol=1e-7)


def test_the_source_stands_alone(lenet):
    _, source, _, _, _ = lenet
    text = source.read_text()
    assert '#include "' not in text  # the runtime is written into it
    assert "int main(int argc, char** argv)" in text and "fluid_cpp_conv2d_0" in text


def test_bad_inputs_get_a_message_and_status_2(lenet, tmp_path):
    root, _, binary, _, _ = lenet
    usage = run(binary)
    assert usage.returncode == 2 and "usage:" in usage.stderr and "img.npy" in usage.stderr
    assert "PARAMS: the saved model as `fluid-nb compile` took it" in usage.stderr
    lone = tmp_path / "lone.pdmodel"
    lone.write_bytes(b"")
    missing = run(binary, lone, root / "img.npy", tmp_path)
    assert missing.returncode == 2 and "lone.pdiparams, but there is no such file" in \
        missing.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((3, 1, 28, 28), "float32"))
    wrong = run(binary, root / "dir", tmp_path / "wrong.npy", tmp_path)
    assert wrong.returncode == 2
    assert "feed img expected dtype <f4 and shape (4, 1, 28, 28)" in wrong.stderr
    truncated = tmp_path / "params"
    truncated.write_bytes((root / "combined" / "__params__").read_bytes()[:100])
    cut = run(binary, truncated, root / "img.npy", tmp_path)
    assert cut.returncode == 2 and "but the file ends" in cut.stderr
    assert not list(tmp_path.glob("*.npy.part"))  # no partial output


def test_a_model_input_without_a_feed_is_refused(lenet, tmp_path, capsys):
    root, _, _, _, _ = lenet
    assert cli(["compile", str(root / "dir"), "-o", str(tmp_path / "x.cc")]) == 1
    assert "a --feed for each input of the model expected (img)" in capsys.readouterr().err
    assert not (tmp_path / "x.cc").exists()


@pytest.fixture(scope="module")
def lenet_cuda(lenet):
    """The same LeNet compiled by ``--target cuda`` and built with nvcc."""
    root = lenet[0]
    source, binary = root / "lenet.cu", root / "lenet_cuda"
    assert cli(["compile", str(root / "dir"), "--feed", f"img={root / 'img.npy'}",
                "-o", str(source), "--target", "cuda", "--binary", str(binary)]) == 0
    return source, binary


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not installed")
def test_the_cuda_source_stands_alone(lenet_cuda):
    source, binary = lenet_cuda
    text = source.read_text()
    assert '#include "' not in text and "#include <cublas" not in text  # opened at run time
    assert "fluid_cuda_conv2d_0" in text and "fluid_cpp_" not in text
    assert "standalone_cuda_main(argc, argv" in text
    assert os.access(binary, os.X_OK)


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not installed")
def test_the_cuda_binary_checks_its_inputs_before_the_device(lenet, lenet_cuda, tmp_path):
    root, binary = lenet[0], lenet_cuda[1]
    usage = run(binary)
    assert usage.returncode == 2 and "usage:" in usage.stderr and "img.npy" in usage.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((4, 1, 28, 28), "float64"))
    wrong = run(binary, root / "dir", tmp_path / "wrong.npy", tmp_path)
    assert wrong.returncode == 2
    assert "feed img expected dtype <f4 and shape (4, 1, 28, 28)" in wrong.stderr


@pytest.mark.skipif(not HAS_NVCC or is_compiled_with_cuda(),
                    reason="nvcc is not installed" if not HAS_NVCC else "a GPU is visible")
def test_without_a_gpu_the_cuda_binary_names_the_failure(lenet, lenet_cuda, tmp_path):
    root, binary = lenet[0], lenet_cuda[1]
    done = run(binary, root / "dir", root / "img.npy", tmp_path)
    assert done.returncode == 3, done.stderr
    assert "fluid_nb compiled program: CUDA failed in cudaMalloc" in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.gpu
@pytest.mark.parametrize("params", ["dir", "combined/__params__"])
def test_the_cuda_binary_predicts_what_the_interpreter_does(lenet, lenet_cuda, params,
                                                            tmp_path):
    root, _, _, want, name = lenet
    done = run(lenet_cuda[1], root / params, root / "img.npy", tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), want, rtol=1e-5, atol=1e-6)


def test_an_unknown_target_is_refused_before_anything_is_written(lenet, tmp_path, capsys):
    root = lenet[0]
    assert cli(["compile", str(root / "dir"), "--feed", f"img={root / 'img.npy'}",
                "-o", str(tmp_path / "x.cc"), "--target", "rocm"]) == 1
    assert "target expected 'cpp' or 'cuda', but received 'rocm'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
