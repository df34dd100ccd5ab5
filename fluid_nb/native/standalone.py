"""A standalone program: the generated C++ of an inference model with a ``main()`` that
reads the parameters from Paddle's files and the feeds from ``.npy`` files, runs, and writes
the fetches as ``.npy`` files, so a model becomes a binary with no Python.

The source is self-contained (the runtime headers are written into it); building it links
the OpenBLAS of NumPy's wheel (its path baked in as the binary's rpath).
"""
import os
import pathlib
import subprocess

from ..errors import InvalidArgument, PreconditionNotMet, Unimplemented, expected
from ..framework.program import Program, without_feed_fetch_ops
from ..tensor.dtypes import VarType, convert_dtype
from .build import BUILD_TIMEOUT_S, RUNTIME, blas, compiler
from .generate import generate

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


def standalone_source(program, feed, fetch, scope):
    """The self-contained C++ of ``program`` (block 0, every op compiled) with its main()."""
    if not isinstance(program, Program):
        raise InvalidArgument(expected("standalone_source", "program", "a Program",
                                       type(program).__name__))
    source = generate(program, feed=feed, fetch=fetch, scope=scope)
    if source.dynamic:
        raise Unimplemented(expected(
            "a standalone program", "program", "one without LoD or sub-blocks (a standalone "
            "main() feeds dense .npy arrays)", "LoD or sub-blocks"))
    if source.fallbacks:
        listing = "; ".join(f"op {i} {t}: {why}" for i, t, why in source.fallbacks)
        raise InvalidArgument(expected("a standalone program", "every op with native code",
                                       "an emitter for each op", listing))
    _, _, width, _ = blas()
    sgemm, dgemm = _blas_symbols()
    index = {v.name: v.index for v in source.variables}
    persistables = sorted(
        var.name for var in without_feed_fetch_ops(program).global_block().vars.values()
        if var.persistable and var.type == VarType.LOD_TENSOR)
    body = source.source.replace('#include "fluid_native.h"', "\n".join([
        f"#define FLUID_BLAS_INT {width}", _inlined("fluid_native.h"),
        _inlined("fluid_native_main.h")]))
    fetch_names = [getattr(f, "name", f) for f in fetch]
    lines = [body, "// --- the standalone program --------------------------------------------",
             f'extern "C" void {sgemm}();  // NumPy\'s OpenBLAS, linked at build time',
             f'extern "C" void {dgemm}();', "",
             "static const fluid_native::VarInfo kVars[] = {"]
    lines += [_var_info(v) for v in source.variables]
    lines += ["};",
              "// every persistable of the program, sorted by name: a combined file's records",
              "static const int kParams[] = {"
              + ", ".join(str(index.get(name, -1)) for name in persistables) + "};",
              "static const int kFetches[] = {"
              + ", ".join(str(index[name]) for name in fetch_names) + "};", "",
              "int main(int argc, char** argv) {",
              f"  fluid_sgemm = reinterpret_cast<fluid_native::sgemm_fn>(&{sgemm});",
              f"  fluid_dgemm = reinterpret_cast<fluid_native::dgemm_fn>(&{dgemm});",
              f"  return fluid_native::standalone_main(argc, argv, kVars, {len(source.variables)},"
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


def build_binary(source_path, binary_path):
    """Build the standalone source at ``source_path`` into the executable ``binary_path``,
    linked to the OpenBLAS NumPy's wheel carries."""
    command, _ = compiler()
    library = pathlib.Path(blas()[3]._name)
    binary_path = pathlib.Path(binary_path)
    partial = binary_path.with_name(binary_path.name + ".part")
    result = subprocess.run(
        [command, "-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c++17", str(source_path),
         "-o", str(partial), str(library), f"-Wl,-rpath,{library.parent}"],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        if partial.exists():
            partial.unlink()
        raise PreconditionNotMet(expected(
            "fluid-nb compile", f"{command} on {source_path}", "a build",
            f"exit status {result.returncode}: {result.stderr.strip()[-2000:]}"))
    os.replace(partial, binary_path)
    return binary_path
