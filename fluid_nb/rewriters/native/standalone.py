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
import errno
import glob
import os
import pathlib
import shutil
import sys
import tempfile

from ...errors import InvalidArgument, NotFound, PreconditionNotMet, Unimplemented, expected
from ...framework.program import without_feed_fetch_ops
from ...tensor.dtypes import VarType, convert_dtype
from .arguments import check
from .build import (RUNTIME, blas, cache_dir, compiler, cuda_flags, flags, nvcc, run_build,
                    workspace)
from .generate import HEADERS, generate
from .names import c_string

_ROLES = {"feed": 0, "persistable": 1, "temporary": 2}


def _var_info(v):
    dims = list(v.shape) + [0] * (8 - len(v.shape))
    if len(v.shape) > 8:
        raise InvalidArgument(expected("a standalone program", f"variable {v.name!r}",
                                       "at most 8 dims", len(v.shape)))
    return (f'  {{{c_string(v.name)}, {_ROLES[v.role]}, {c_string(v.dtype.str)}, '
            f"{int(convert_dtype(v.dtype))}, {v.dtype.itemsize}, {len(v.shape)}, "
            f"{{{', '.join(str(d) for d in dims)}}}}},")


#: what the binary appends to a fetched variable's name: its file, and that file while written
_FETCH_SUFFIX = ".npy.part"
_NAME_MAX = 255  # bytes in one path component (Linux, macOS)


def fetch_file(name):
    """The file the binary writes fetched variable ``name`` to, in its output folder:
    the name with each ``/`` as ``_`` (as ``fluid-nb run --save-dir`` names them) and
    ``.npy``."""
    return str(name).replace("/", "_") + ".npy"


def check_fetch_files(names):
    """Refuse fetched variables whose files (:func:`fetch_file`) cannot be written each
    to its own file in one folder: a NUL (the end of a C string), too long a name, or two
    names that become one file."""
    seen = {}
    for name in names:
        data = fetch_file(name).encode("utf-8", "surrogatepass")
        if b"\0" in data or len(data) + len(_FETCH_SUFFIX) - len(".npy") > _NAME_MAX:
            raise InvalidArgument(expected(
                "a standalone program", f"fetch variable {str(name)[:80]!r}",
                f"a name that makes a file name (no NUL, at most "
                f"{_NAME_MAX - len(_FETCH_SUFFIX)} bytes)", f"{len(data) - 4} bytes"))
        other = seen.setdefault(fetch_file(name), name)
        if other != name:
            raise InvalidArgument(expected(
                "a standalone program", "fetch variables", "names that make different "
                "files", f"{str(other)[:80]!r} and {str(name)[:80]!r}, both "
                f"{fetch_file(name)[:80]!r}"))


def _inlined(header):
    """A runtime header's text without its #pragma and the includes of the other headers."""
    lines = (RUNTIME / header).read_text().splitlines()
    return "\n".join(l for l in lines if l.strip() != "#pragma once"
                     and not l.startswith('#include "'))


def standalone_source(program, feed, fetch, scope, target="cpp"):
    """The self-contained C++ (or, ``target="cuda"``, CUDA) of ``program`` (block 0, every
    op compiled) with its main()."""
    check("a standalone program", program, feed, fetch, scope, target, fetch_required=True)
    source = generate(program, target=target, feed=feed, fetch=fetch, scope=scope)
    if source.dynamic:
        raise Unimplemented(expected(
            "a standalone program", "program", "one without LoD or sub-blocks (a standalone "
            "main() feeds dense .npy arrays)", "LoD or sub-blocks"))
    if source.fallbacks:
        listing = "; ".join(f"op {i} {t}: {why}" for i, t, why in source.fallbacks)
        raise InvalidArgument(expected("a standalone program", "every op with native code",
                                       "an emitter for each op", listing))
    fetch_names = [getattr(f, "name", f) for f in fetch]
    check_fetch_files(fetch_names)
    index = {v.name: v.index for v in source.variables}
    persistables = sorted(
        var.name for var in without_feed_fetch_ops(program).global_block().vars.values()
        if var.persistable and var.type == VarType.LOD_TENSOR)
    if target == "cuda":
        runtime = [_inlined(header) for header in (
            "fluid_native_maps.h", "fluid_native_rows.h", "fluid_native_cuda.cuh",
            "fluid_native_products.h", "fluid_native_main.h", "fluid_native_cuda_main.cuh")]
        prologue, entry = [], "standalone_cuda_main"
    else:
        width = blas()[2]
        sgemm, dgemm = _blas_symbols()
        runtime = [f"#define FLUID_BLAS_INT {width}"] + [_inlined(header) for header in (
            "fluid_native_maps.h", "fluid_native_rows.h", "fluid_native_gemm.h",
            "fluid_native.h", "fluid_native_products.h", "fluid_native_main.h")]
        prologue = [f"  fluid_sgemm = reinterpret_cast<fluid_native::sgemm_fn>(&{sgemm});",
                    f"  fluid_dgemm = reinterpret_cast<fluid_native::dgemm_fn>(&{dgemm});"]
        entry = "standalone_main"
    body = source.source.replace(f'#include "{HEADERS[target]}"', "\n".join(runtime))
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
    nvcc for the generations ``CUDA_ARCHS`` names, opening cuBLAS when it runs. The
    compiler writes into a temporary folder of the build cache, and the executable is
    moved into place: a failed build leaves the folder of ``binary_path`` as it was."""
    binary_path = pathlib.Path(binary_path)
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
    with _staging() as work:
        partial = pathlib.Path(work) / binary_path.name
        run_build(command, [*arguments, "-o", str(partial), *link],
                  f"fluid-nb compile on {source_path}")
        _place(partial, binary_path)
    return binary_path


def check_output_paths(source_path, binary_path=None):
    """Refuse, before anything is generated or written, an output of ``fluid-nb compile``
    that cannot be written: a directory, a name too long, a folder that is missing."""
    for option, path in (("-o", source_path), ("--binary", binary_path)):
        if path is None:
            continue
        path = pathlib.Path(path)
        where = f"{option} {str(path)[:200]}"
        if len(os.fsencode(path.name)) > _NAME_MAX:
            raise InvalidArgument(expected("fluid-nb compile", where, f"a file name of at "
                                           f"most {_NAME_MAX} bytes",
                                           f"{len(os.fsencode(path.name))} bytes"))
        try:
            is_dir, in_folder = path.is_dir(), path.parent.is_dir()
        except (OSError, ValueError) as exc:  # a folder's name too long, a NUL
            raise InvalidArgument(expected("fluid-nb compile", where, "a path it can write",
                                           getattr(exc, "strerror", None) or str(exc))) from None
        if is_dir:
            raise InvalidArgument(expected("fluid-nb compile", where,
                                           "the path of a file to write", "a directory"))
        if not in_folder:
            raise NotFound(expected("fluid-nb compile", where, "a path in an existing folder",
                                    f"no folder {str(path.parent)[:200]}"))


def write_standalone(program, feed, fetch, scope, source_path, binary_path=None,
                     target="cpp"):
    """Write the standalone source of ``program`` to ``source_path`` and (given
    ``binary_path``) build it into that executable; the NativeSource. Both are made in
    a temporary folder of the build cache and moved to their places at the end, so a
    failure (a model without native code, a compiler error, an unwritable folder) leaves
    no file new or changed there."""
    check_output_paths(source_path, binary_path)
    text, source = standalone_source(program, feed, fetch, scope, target=target)
    source_path = pathlib.Path(source_path)
    with _staging() as work:
        staged = pathlib.Path(work) / source_path.name
        try:
            staged.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise PreconditionNotMet(expected("fluid-nb compile", str(source_path)[:200],
                                              "a file it can write",
                                              exc.strerror or type(exc).__name__)) from None
        if binary_path is not None:
            build_binary(staged, binary_path, target=target)
        _place(staged, source_path)
    return source


def _staging():
    """A temporary folder to make an output in: in the native build cache, where builds
    are made (so that a failure leaves the output's folder untouched)."""
    return workspace(cache_dir())


def _place(staged, path):
    """Move the finished file ``staged`` to ``path``: a rename, or (from another file
    system) a copy beside ``path`` renamed over it, so ``path`` is never partial."""
    path = pathlib.Path(path)
    try:
        try:
            os.replace(staged, path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.")
            os.close(handle)
            try:
                shutil.copy2(staged, partial)
                os.replace(partial, path)
            except BaseException:
                os.unlink(partial)
                raise
    except OSError as exc:
        raise PreconditionNotMet(expected("fluid-nb compile", str(path)[:200],
                                          "a path it can write",
                                          exc.strerror or type(exc).__name__)) from None
