"""Building generated C++ into a shared library, cached by what went into it.

The system's C++ compiler (``$CXX``, else ``c++``) builds with ``-O3`` (and
``-march=native`` when asked) against the runtime header and OpenBLAS, which the
``scipy-openblas32`` wheel provides (headers, library, its symbol prefix). A build is cached
under ``$FLUID_NB_CACHE`` (default ``~/.cache/fluid_nb/native``) by a hash of the source,
the header, the compiler's version and the flags; it is written to a temporary file and
renamed into place, so an interrupted build leaves no partial library.
"""
import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

from ..errors import PreconditionNotMet, expected

RUNTIME = pathlib.Path(__file__).parent / "runtime"
BUILD_TIMEOUT_S = 300


def cache_dir():
    root = os.environ.get("FLUID_NB_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "fluid_nb")
    return pathlib.Path(root) / "native"


def compiler():
    """The C++ compiler's command and its version line."""
    command = os.environ.get("CXX") or "c++"
    if shutil.which(command) is None:
        raise PreconditionNotMet(expected("the native compiler", "a C++ compiler",
                                          "$CXX or c++ on the PATH (apt install g++)",
                                          f"{command!r} not found"))
    version = subprocess.run([command, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()[:1]
    return command, version[0] if version else command


def blas():
    """(include dir, library dir, library name, symbol prefix) of OpenBLAS."""
    try:
        import scipy_openblas32 as openblas
    except ImportError:
        raise PreconditionNotMet(expected("the native compiler", "OpenBLAS",
                                          "the scipy-openblas32 package (pip install "
                                          "scipy-openblas32)", "not installed")) from None
    return (openblas.get_include_dir(), openblas.get_lib_dir(), openblas.get_library(),
            "scipy_")


def flags(march_native=False):
    include, lib, name, prefix = blas()
    return (["-O3", "-std=c++17", "-shared", "-fPIC", f"-I{RUNTIME}", f"-I{include}",
             f"-DFLUID_SGEMM={prefix}cblas_sgemm", f"-DFLUID_DGEMM={prefix}cblas_dgemm"]
            + (["-march=native"] if march_native else []),
            [f"-L{lib}", f"-l{name}", f"-Wl,-rpath,{lib}"])


def build(source, march_native=False):
    """The path of the shared library built from ``source`` (from the cache when the same
    source, header, compiler and flags were built before) and whether it was cached."""
    command, version = compiler()
    compile_flags, link_flags = flags(march_native)
    header = (RUNTIME / "fluid_native.h").read_bytes()
    key = hashlib.sha256("\0".join([source, version, " ".join(compile_flags + link_flags)])
                         .encode() + header).hexdigest()[:24]
    directory = cache_dir()
    library = directory / f"fluid_{key}.so"
    if library.exists():
        return library, True
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as work:
        cc = pathlib.Path(work) / f"fluid_{key}.cc"
        cc.write_text(source)
        out = pathlib.Path(work) / library.name
        try:
            result = subprocess.run([command, *compile_flags, str(cc), "-o", str(out),
                                     *link_flags], capture_output=True, text=True,
                                    timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise PreconditionNotMet(expected("the native compiler", "a build within "
                                              f"{BUILD_TIMEOUT_S} s", "a timeout")) from None
        if result.returncode != 0:
            raise PreconditionNotMet(expected(
                "the native compiler", f"{command} on the generated source", "a build",
                f"exit status {result.returncode}: {result.stderr.strip()[-2000:]}"))
        os.replace(out, library)  # atomic: no reader ever sees a partial library
    return library, False


def load(library):
    """The library's ``fluid_run(void**)`` as a ctypes function."""
    lib = ctypes.CDLL(str(library))
    run = lib.fluid_run
    run.argtypes = [ctypes.c_void_p]
    run.restype = None
    return lib, run
