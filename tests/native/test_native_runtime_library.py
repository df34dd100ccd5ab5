"""The runtime library: what no program changes (the single-threaded matrix product, the
LoD and loop kernels' template instances) is compiled once per compiler, and every program
built for this process links it from the build cache instead of compiling its own copy.

The install builds it under the name a build looks for, so a fresh cache gets a copy, not a
ten-second build; a compiler the install did not use gets one built for it; a program's
library holds none of the runtime's code; and an error a runtime kernel raises reaches the
caller as the interpreter's typed error, across the two libraries."""
import subprocess

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native import build as build_module
from fluid_nb.rewriters.native import runtime_library

from .hostile_programs import compiled_agrees, mul_scale
from .test_native_programs import _lod_batches, _programs, dynamic_rnn


def _defined_symbols(library):
    """The C++ names ``library`` defines for others to call (nm: binutils, beside c++)."""
    listed = subprocess.run(["nm", "-DC", "--defined-only", str(library)], check=True,
                            capture_output=True, text=True).stdout
    return listed


def _needed(library):
    """The libraries ``library`` names to be loaded with it (its DT_NEEDED entries)."""
    listed = subprocess.run(["readelf", "-d", str(library)], check=True, capture_output=True,
                            text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in listed.splitlines()
            if "(NEEDED)" in line]


def test_the_install_built_the_runtime_library_under_the_name_a_build_looks_for():
    command, version = build_module.compiler()
    name = runtime_library.file_name(runtime_library.identity(command, version))
    assert runtime_library.PACKAGED.is_file()
    assert runtime_library.PACKAGED_NAME.read_text().strip() == name


def test_a_fresh_cache_gets_the_installed_library_copied(tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    monkeypatch.setattr(build_module, "run_build", _no_compiler)
    library = build_module.runtime_library(*build_module.compiler())
    assert library.parent == tmp_path / "native" and build_module.cached(library)
    assert library.read_bytes() == runtime_library.PACKAGED.read_bytes()


def _no_compiler(*args):
    raise AssertionError("the runtime library was compiled, not copied from the install")


def test_another_compiler_gets_a_runtime_library_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    command, version = build_module.compiler()
    installed = build_module.runtime_library(command, version)
    other = build_module.runtime_library(command, version + " (another build)")
    assert other != installed and build_module.cached(other)
    assert other.read_bytes() != runtime_library.PACKAGED.read_bytes()
    assert "own_gemm::sgemm" in _defined_symbols(other)


def test_programs_link_the_runtime_library_and_hold_none_of_its_code(tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    compiled_agrees(*mul_scale({}, scale=2.0))  # a product: the runtime's sgemm
    main, startup, loss = _programs(dynamic_rnn)  # a loop: the runtime's LoD kernels
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    batch = _lod_batches(1)[0]
    program = native.compile(main, batch, [loss], scope=scope)
    exe.run(program, feed=batch, fetch_list=[loss], scope=scope)
    runtime, = (tmp_path / "native").glob("fluid_runtime_*.so")
    programs = [p for p in (tmp_path / "native").glob("fluid_*.so") if p != runtime]
    assert len(programs) == 2
    in_runtime = _defined_symbols(runtime)
    assert "own_gemm::sgemm" in in_runtime and "lod_rank_table<float>" in in_runtime
    for library in programs:
        assert runtime.name in _needed(library)
        defined = _defined_symbols(library)
        assert "own_gemm" not in defined and "lod_rank_table" not in defined
    # an error inside the runtime's lod_rank_table (a batch without LoD) is caught by the
    # program's entry and raised as the interpreter's error, naming the op
    data = np.asarray(batch["x"])
    with pytest.raises(fluid.errors.InvalidArgument, match="lod_rank_table \\(block 0, op 1\\)"):
        exe.run(program, feed={"x": data}, fetch_list=[loss], scope=scope)
