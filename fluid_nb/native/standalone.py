"""A standalone program: the generated C++ (``target="cpp"``) or CUDA (``"cuda"``) of an
inference model with a ``main()`` that reads the parameters from Paddle's files and the feeds
from ``.npy`` files, runs, and writes the fetches as ``.npy`` files, so a model becomes a
binary with no Python.

The source is self-contained (the runtime headers are written into it). Building the C++
links the OpenBLAS of NumPy's wheel, its folder baked in as the binary's rpath. The CUDA
program builds with nvcc alone; its main() opens cuBLAS when it runs (the toolkit's or an
``nvidia-cublas`` wheel's folder, when the build finds one, is its rpath) and makes its own
cuBLAS handle and device buffers.
"""
import glob
import os
import pathlib
import sys

from ..errors import InvalidArgument, PreconditionNotMet, Unimplemented, expected
from ..framework.program import Program, without_feed_fetch_ops
from ..tensor.dtypes import VarType, convert_dtype
from .build import RUNTIME, blas, compiler, cuda_flags, flags, nvcc, run_build
from .generate import HEADERS, TARGETS, generate

_ROLES = {"feed": 0, "persistable": 1, "temporary": 2}


def _var_info(v):
    dims = list(v.shape) + [0] * (8 - len(v.shape))
    if len(v.shape) > 8:
        raise InvalidArgument(expected("a standalone program", f"variable {v.name!r}",
                                       "at most 8 dims", len(v.shape)))
    return (f'  {{"{v.name}", {_ROLES[v.role]}, "{v.dtype.str}", '
            f"{int(convert_dtype(v.dtype))}, {v.dtype.itemsize}, {len(v.shape)}, "
            f"{{{', '.join(str(d) for d in dims)}}}}},")


def _inlined(header):
    """A runtime header's text without its #pragma and the includes of the other headers."""
    lines = (RUNTIME / header).read_text().splitlines()
    return "\n".join(l for l in lines if l.strip() != "#pragma once"
                     and not l.startswith('#include "'))


def standalone_source(program, feed, fetch, scope, target="cpp"):
    """The self-contained C++ (or, ``target="cuda"``, CUDA) of ``program`` (block 0, every
    op compiled) with its main()."""
    if not isinstance(program, Program):
        raise InvalidArgument(expected("standalone_source", "program", "a Program",
                                       type(program).__name__))
    if target not in TARGETS:
        raise InvalidArgument(expected("a standalone program", "target",
                                       " or ".join(map(repr, TARGETS)), repr(target)))
    source = generate(program, target=target, feed=feed, fetch=fetch, scope=scope)
    if source.dynamic:
        raise Unimplemented(expected(
            "a standalone program", "program", "one without LoD or sub-blocks (a standalone "
            "main() feeds dense .npy arrays)", "LoD or sub-blocks"))
    if source.fallbacks:
        listing = "; ".join(f"op {i} {t}: {why}" for i, t, why in source.fallbacks)
        raise InvalidArgument(expected("a standalone program", "every op with native code",
                                       "an emitter for each op", listing))
    index = {v.name: v.index for v in source.variables}
    persistables = sorted(
        var.name for var in without_feed_fetch_ops(program).global_block().vars.values()
        if var.persistable and var.type == VarType.LOD_TENSOR)
    if target == "cuda":
        runtime = [_inlined("fluid_native_cuda.cuh"), _inlined("fluid_native_main.h"),
                   _inlined("fluid_native_cuda_main.cuh")]
        prologue, entry = [], "standalone_cuda_main"
    else:
        width = blas()[2]
        sgemm, dgemm = _blas_symbols()
        runtime = [f"#define FLUID_BLAS_INT {width}", _inlined("fluid_native.h"),
                   _inlined("fluid_native_main.h")]
        prologue = [f"  fluid_sgemm = reinterpret_cast<fluid_native::sgemm_fn>(&{sgemm});",
                    f"  fluid_dgemm = reinterpret_cast<fluid_native::dgemm_fn>(&{dgemm});"]
        entry = "standalone_main"
    body = source.source.replace(f'#include "{HEADERS[target]}"', "\n".join(runtime))
    fetch_names = [getattr(f, "name", f) for f in fetch]
    lines = [body, "// --- the standalone program --------------------------------------------"]
    if target == "cpp":
        lines += [f'extern "C" void {sgemm}();  // NumPy\'s OpenBLAS, linked at build time',
                  f'extern "C" void {dgemm}();', ""]
    lines += ["static const fluid_native::VarInfo kVars[] = {"]
    lines += [_var_info(v) for v in source.variables]
    lines += ["};",
              "// every persistable of the program, sorted by name: a combined file's records",
              "static const int kParams[] = {"
              + ", ".join(str(index.get(name, -1)) for name in persistables) + "};",
              "static const int kFetches[] = {"
              + ", ".join(str(index[name]) for name in fetch_names) + "};", "",
              "int main(int argc, char** argv) {", *prologue,
              f"  return fluid_native::{entry}(argc, argv, kVars, {len(source.variables)},"
              f" kParams, {len(persistables)}, kFetches, {len(fetch_names)}, fluid_run);",
              "}", ""]
    return "\n".join(lines), source


def _blas_symbols():
    library = blas()[3]
    from .build import _SYMBOLS
    for sgemm, dgemm, _ in _SYMBOLS:
        if hasattr(library, sgemm):
            return sgemm, dgemm
    raise PreconditionNotMet(expected("a standalone program", "CBLAS symbols", "sgemm",
                                      "none"))


def cublas_folder():
    """The folder of a cuBLAS library (``libcublas.so*``) on this machine, or None: the
    CUDA toolkit's (``$CUDA_HOME``, ``$CUDA_PATH``, the folder above nvcc's,
    /usr/local/cuda), else an ``nvidia-cublas`` wheel's in this Python's environment. The
    standalone CUDA program opens cuBLAS when it runs; this folder becomes its rpath."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             str(pathlib.Path(nvcc()[0]).resolve().parent.parent), "/usr/local/cuda"]
    folders = [pathlib.Path(root) / lib for root in roots if root
               for lib in ("lib64", "targets/x86_64-linux/lib")]
    for entry in sys.path:  # the wheels: nvidia/cublas/lib, nvidia/cu13/lib
        folders += map(pathlib.Path, sorted(glob.glob(os.path.join(entry, "nvidia", "*",
                                                                   "lib"))))
    for folder in folders:
        if folder.is_dir() and any(folder.glob("libcublas.so*")):
            return folder
    return None


def build_binary(source_path, binary_path, target="cpp"):
    """Build the standalone source at ``source_path`` into the executable ``binary_path``:
    C++ linked to the OpenBLAS NumPy's wheel carries, or (``target="cuda"``) CUDA built by
    nvcc for the generations ``CUDA_ARCHS`` names, opening cuBLAS when it runs."""
    binary_path = pathlib.Path(binary_path)
    partial = binary_path.with_name(binary_path.name + ".part")
    if target == "cuda":
        command, _ = nvcc()
        # -x cu: the source is CUDA whatever its file is called; cuBLAS is opened at run
        # time, through this rpath when a cuBLAS was found here, else LD_LIBRARY_PATH
        folder = cublas_folder()
        link = ["-ldl", *(["-Xlinker", f"-rpath,{folder}"] if folder else [])]
        arguments = [*cuda_flags(shared=False)[0], "-x", "cu", str(source_path)]
    else:
        command, _ = compiler()
        library = pathlib.Path(blas()[3]._name)
        link = [str(library), f"-Wl,-rpath,{library.parent}"]
        arguments = [*flags(shared=False)[0], str(source_path)]
    try:
        run_build(command, [*arguments, "-o", str(partial), *link],
                  f"fluid-nb compile on {source_path}")
    except PreconditionNotMet:
        if partial.exists():
            partial.unlink()
        raise
    os.replace(partial, binary_path)
    return binary_path
