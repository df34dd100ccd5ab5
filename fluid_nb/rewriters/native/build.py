"""Building generated C++ into a shared library, cached by what went into it.

The system's C++ compiler (``$CXX``, else ``c++``) builds with ``-O3`` (and
``-march=native`` when asked) against the runtime header. The library links no BLAS: its
``fluid_sgemm`` and ``fluid_dgemm`` pointers are set at load time to the CBLAS of the
OpenBLAS NumPy's wheels bundle (one BLAS, one thread pool in the process; two would fight
over the cores). A build is cached
under ``$FLUID_NB_CACHE`` (default ``~/.cache/fluid_nb/native``) by a hash of the source,
the header, the compiler's version and the flags (with ``-march=native``, also what the
machine is: :func:`native_machine`); it is written to a temporary file and
renamed into place, so an interrupted build leaves no partial library, and the SHA-256 of
its bytes is recorded beside it: a cached library is loaded only when its bytes still have
that hash (a file cut short, zeroed or replaced would crash the process that loads it), and
is built again otherwise.
"""
import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

from ...errors import PreconditionNotMet, expected
from .runtime_library import PACKAGED, PACKAGED_NAME, compiler_command, version_line
from .runtime_library import arguments as runtime_library_arguments
from .runtime_library import file_name as runtime_library_file_name
from .runtime_library import identity as runtime_library_identity

RUNTIME = pathlib.Path(__file__).parent / "runtime"
BUILD_TIMEOUT_S = 300


def cache_dir():
    root = os.environ.get("FLUID_NB_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "fluid_nb")
    return pathlib.Path(root) / "native"


def compiler():
    """The C++ compiler's command and its version line."""
    command = compiler_command()
    if shutil.which(command) is None:
        raise PreconditionNotMet(expected("the native compiler", "a C++ compiler",
                                          "$CXX or c++ on the PATH (apt install g++)",
                                          f"{command!r} not found"))
    return command, version_line(command)


#: (sgemm symbol, dgemm symbol, integer width) of the CBLAS builds NumPy bundles: NumPy 2's
#: scipy-openblas64 (ILP64, prefixed and suffixed), NumPy 1.x's openblas64_ (ILP64,
#: suffixed), and a plain LP64 CBLAS
_SYMBOLS = [("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", "int64_t"),
            ("cblas_sgemm64_", "cblas_dgemm64_", "int64_t"),
            ("scipy_cblas_sgemm", "scipy_cblas_dgemm", "int"),
            ("cblas_sgemm", "cblas_dgemm", "int")]
_blas = []


def blas():
    """(sgemm address, dgemm address, the C integer type of their sizes, the library): the
    OpenBLAS NumPy loaded, so compiled code shares NumPy's BLAS and its threads."""
    if _blas:
        return _blas[0]
    candidates = []
    libs = pathlib.Path(np.__file__).parent.parent / "numpy.libs"
    if libs.is_dir():
        candidates += sorted(p for p in libs.iterdir() if "blas" in p.name)
    for path in candidates:
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        for sgemm, dgemm, width in _SYMBOLS:
            try:
                found = (ctypes.cast(getattr(library, sgemm), ctypes.c_void_p).value,
                         ctypes.cast(getattr(library, dgemm), ctypes.c_void_p).value, width)
            except AttributeError:
                continue
            _blas.append(found + (library,))  # the handle keeps the library loaded
            return _blas[0]
    raise PreconditionNotMet(expected("the native compiler", "a CBLAS library",
                                      "the OpenBLAS NumPy's wheels bundle (numpy.libs)",
                                      "none in this NumPy"))


_machines = {}


def native_machine(command):
    """What ``-march=native`` means to ``command`` on this machine (its ``-march=`` and
    ``-mtune=`` as the compiler resolves them, e.g. ``znver3``), asked once per process: a
    build for the machine is cached under it, so a cache folder shared by machines of
    other kinds never hands one of them another's instructions."""
    if command not in _machines:
        try:
            lines = subprocess.run([command, "-march=native", "-Q", "--help=target"],
                                   capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            lines = ""
        resolved = [" ".join(line.split()) for line in lines.splitlines()
                    if line.strip().startswith(("-march=", "-mtune="))]
        try:  # and the instruction sets, where Linux says them
            with open("/proc/cpuinfo", errors="replace") as info:
                features = next((line for line in info if line.startswith("flags")), "")
        except OSError:
            features = ""
        _machines[command] = " ".join(resolved) + " | " + features.strip()
    return _machines[command]


def flags(march_native=False, shared=True):
    """(compile flags, link flags) of a C++ build: a shared library, or (``shared=False``)
    an executable."""
    width = blas()[2]
    # -fno-math-errno: sqrt and exp need not set errno; -fno-trapping-math: a loop may
    # compute both sides of a choice (tanh's), as nothing reads the FP exception flags; so
    # their loops vectorise (the values are the same)
    return (["-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c++17",
             *(["-shared", "-fPIC"] if shared else []), f"-I{RUNTIME}",
             f"-DFLUID_BLAS_INT={width}"] + (["-march=native"] if march_native else []), [])


#: the GPU generations a CUDA build carries code for (Ampere, Hopper, and PTX for later ones)
CUDA_ARCHS = ["-gencode", "arch=compute_80,code=sm_80",
              "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]


def nvcc():
    """CUDA's compiler and its version line."""
    command = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(command) and shutil.which(command) is None:
        raise PreconditionNotMet(expected("the native compiler", "CUDA's compiler",
                                          "nvcc on the PATH or $NVCC", "none"))
    lines = subprocess.run([command, "--version"], capture_output=True, text=True,
                           timeout=30).stdout.splitlines()
    return command, lines[-1] if lines else command


def cuda_flags(shared=True):
    """(compile flags, link flags) of a CUDA build: a shared library or an executable."""
    # --extended-lambda: an op's formula is a __device__ lambda handed to the map kernels
    return ["-O3", "-std=c++17", "--extended-lambda",
            *(["-shared", "-Xcompiler", "-fPIC"] if shared else []), f"-I{RUNTIME}",
            *CUDA_ARCHS], []


#: the compiler's first lines that a failed build's message quotes (the rest: its log file)
ERROR_LINES = 8


def run_build(command, arguments, where):
    """Run the compiler; a failure or a run past ``BUILD_TIMEOUT_S`` is a
    PreconditionNotMet naming ``where``, quoting the compiler's first lines and the log
    file (in the build cache's ``logs`` folder) where its whole output is."""
    try:
        result = subprocess.run([command, *arguments], capture_output=True, text=True,
                                errors="replace", timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PreconditionNotMet(expected(where, f"{command}", f"a build within "
                                          f"{BUILD_TIMEOUT_S} s", "a timeout")) from None
    except OSError as exc:
        raise PreconditionNotMet(expected(where, f"{command}", "a compiler that starts",
                                          exc.strerror or type(exc).__name__)) from None
    if result.returncode != 0:
        raise PreconditionNotMet(expected(
            where, f"{command}", "a build",
            f"exit status {result.returncode}: {_summary(result.stderr + result.stdout)}"))


def _summary(output):
    """The first lines of a compiler's output and the log file holding all of it."""
    lines = output.strip().splitlines()
    head = "\n".join(line[:300] for line in lines[:ERROR_LINES])
    if len(lines) <= ERROR_LINES:
        return head
    logs = cache_dir() / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        handle, log = tempfile.mkstemp(dir=logs, prefix="build-", suffix=".log")
        with os.fdopen(handle, "w") as file:
            file.write(output)
    except OSError as exc:  # the cache cannot keep it: the message still has the head
        return f"{head}\n... ({len(lines)} lines in all; no log: {exc.strerror})"
    return f"{head}\n... ({len(lines)} lines in all: {log})"


def _regular_bytes(path):
    """A regular file's bytes, or None for anything else (missing, a directory, a link,
    unreadable)."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_bytes()
    except OSError:
        return None


def _record(library):
    """The file beside ``library`` holding the SHA-256 of its bytes."""
    return library.with_name(library.name + ".sha256")


def cached(library):
    """Whether ``library`` is a build this cache made: a regular file whose SHA-256 is the
    one recorded beside it when it was built. Anything else (cut short, zeroed, another
    file, a directory) is not loaded but built again."""
    recorded, data = _regular_bytes(_record(library)), _regular_bytes(library)
    return recorded is not None and data is not None and \
        recorded.strip() == hashlib.sha256(data).hexdigest().encode()


def workspace(directory):
    """A temporary folder in ``directory`` (made if need be) to build in; a
    PreconditionNotMet when ``directory`` cannot be a folder of builds (a file in the
    way, no permission, a name too long, a read-only file system)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        work = tempfile.TemporaryDirectory(dir=directory)
    except OSError as exc:
        raise PreconditionNotMet(expected(
            "the native build cache", str(directory)[:200],
            "a folder it can write ($FLUID_NB_CACHE)",
            exc.strerror or type(exc).__name__)) from None
    return work


def _clear(path):
    """Make room for a file at ``path``: a directory there goes (a file is replaced)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def _install(built, library):
    """Move the fresh build ``built`` to ``library``, its hash recorded first: a reader
    sees the old entry, or the new library with its hash, or a mismatch it rebuilds; never
    a partial library."""
    record = _record(library)
    staged = built.with_name(record.name)
    staged.write_text(hashlib.sha256(built.read_bytes()).hexdigest() + "\n")
    _clear(record)
    _clear(library)
    os.replace(staged, record)
    os.replace(built, library)


def runtime_library(command, version):
    """The runtime library (runtime_library.py) for the compiler ``command`` (whose
    version line is ``version``) in the build cache, checked as a program's library is:
    the install's build copied there when it was made by this compiler from these
    sources, else built there (once)."""
    name = runtime_library_file_name(runtime_library_identity(command, version))
    directory = cache_dir()
    library = directory / name
    if cached(library):
        return library
    with workspace(directory) as work:
        out = pathlib.Path(work) / name
        packaged = _regular_bytes(PACKAGED_NAME)
        if packaged is not None and packaged.decode("utf-8", "replace").strip() == name and \
                _regular_bytes(PACKAGED) is not None:
            shutil.copyfile(PACKAGED, out)
        else:
            run_build(command, runtime_library_arguments(out, name),
                      "the native compiler on the runtime library")
        _install_in_cache(out, library)
    return library


def _install_in_cache(built, library):
    """:func:`_install`, a file system that refuses it a PreconditionNotMet naming the
    cache entry."""
    try:
        _install(built, library)
    except OSError as exc:
        raise PreconditionNotMet(expected(
            "the native build cache", str(library)[:200], "a place for the build",
            exc.strerror or type(exc).__name__)) from None


def build(source, march_native=False, target="cpp"):
    """The path of the shared library built from ``source`` (from the cache when the same
    source, header, compiler and flags were built before and the cached file is intact)
    and whether it was cached. ``target="cuda"`` builds a ``.cu`` with nvcc. A C++ build
    links the runtime library (:func:`runtime_library`), found beside it in the cache."""
    if target == "cuda":
        command, version = nvcc()
        compile_flags, link_flags = cuda_flags()
    else:
        command, version = compiler()
        compile_flags, link_flags = flags(march_native)
        runtime = runtime_library(command, version)
        compile_flags = [*compile_flags, "-DFLUID_NATIVE_PRECOMPILED"]
        # (--no-as-needed: the build names the runtime library even when its code calls
        # none of it, so what the loader asks of the runtime is found through any program)
        link_flags = [*link_flags, "-Wl,--no-as-needed", str(runtime), "-Wl,-rpath,$ORIGIN"]
    # every runtime header (one includes another), in a fixed order
    header = b"".join(path.read_bytes() for path in sorted(RUNTIME.iterdir())
                      if path.suffix in (".h", ".cuh", ".cc"))
    machine = native_machine(command) if march_native and target != "cuda" else ""
    key = hashlib.sha256("\0".join([source, version, " ".join(compile_flags + link_flags),
                                    machine])
                         .encode("utf-8", "surrogatepass") + header).hexdigest()[:24]
    directory = cache_dir()
    library = directory / f"fluid_{key}.so"
    if cached(library):
        return library, True
    with workspace(directory) as work:
        cc = pathlib.Path(work) / f"fluid_{key}.{'cu' if target == 'cuda' else 'cc'}"
        cc.write_text(source, encoding="utf-8", errors="surrogatepass")
        out = pathlib.Path(work) / library.name
        run_build(command, [*compile_flags, str(cc), "-o", str(out), *link_flags],
                  "the native compiler on the generated source")
        _install_in_cache(out, library)
    return library, False


def load_cuda(library, cupy):
    """A loaded CUDA build, its cuBLAS pointers set to CuPy's cuBLAS and handle."""
    lib = ctypes.CDLL(str(library))
    cublas = _cublas_library(cupy)
    ctypes.c_void_p.in_dll(lib, "fluid_cublas_handle").value = \
        cupy.cuda.device.get_cublas_handle()
    for name, symbol in (("fluid_cublas_sgemm", "cublasSgemm_v2"),
                         ("fluid_cublas_dgemm", "cublasDgemm_v2")):
        ctypes.c_void_p.in_dll(lib, name).value = \
            ctypes.cast(getattr(cublas, symbol), ctypes.c_void_p).value
    return lib


def _cublas_library(cupy):
    """The cuBLAS CuPy loaded (found by name among the process's libraries)."""
    cupy.cuda.device.get_cublas_handle()  # makes CuPy load it
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcublas.so" in line})
    for path in paths:
        if "libcublasLt" not in path:
            return ctypes.CDLL(path)
    raise PreconditionNotMet(expected("the CUDA target", "cuBLAS", "the cuBLAS CuPy loaded",
                                      "none in this process"))


#: the process's choice for small float products (FLUID_NB_SMALL_GEMM, else timed)
_small_gemm = []


def small_products_by_blas(lib):
    """Whether a compiled program's small float products (the runtime's own product's
    range) go to the BLAS: ``FLUID_NB_SMALL_GEMM`` (``blas`` or ``own``), else the runtime
    library's timing of both on this machine (``fluid_small_gemm_choice``, reached through
    the program ``lib`` that links it, as every C++ build does), once a process."""
    if not _small_gemm:
        forced = os.environ.get("FLUID_NB_SMALL_GEMM", "").strip().lower()
        if forced not in ("", "blas", "own"):
            raise PreconditionNotMet(expected(
                "the native loader", "FLUID_NB_SMALL_GEMM", "'own' or 'blas' (or unset)",
                repr(os.environ["FLUID_NB_SMALL_GEMM"])[:80]))
        if forced:
            _small_gemm.append(forced == "blas")
        else:
            choose = lib.fluid_small_gemm_choice
            choose.argtypes, choose.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
            sgemm, _, width = blas()[:3]
            _small_gemm.append(bool(choose(sgemm, width == "int64_t")))
    return _small_gemm[0]


def load(library):
    """The loaded library, its BLAS pointers set (:func:`entry` gives its functions)."""
    sgemm, dgemm = blas()[:2]
    try:
        lib = ctypes.CDLL(str(library))
        ctypes.c_void_p.in_dll(lib, "fluid_sgemm").value = sgemm
        ctypes.c_void_p.in_dll(lib, "fluid_dgemm").value = dgemm
        ctypes.c_int.in_dll(lib, "fluid_small_gemm_by_blas").value = small_products_by_blas(lib)
    except (OSError, ValueError) as exc:
        raise PreconditionNotMet(expected("the native loader", str(library)[:200],
                                          "a library the native compiler built",
                                          str(exc)[:200])) from None
    return lib


def entry(lib, symbol):
    """The library's ``symbol(void**)`` (``fluid_run``, a ``fluid_segment_<k>``)."""
    function = getattr(lib, symbol)
    function.argtypes = [ctypes.c_void_p]
    function.restype = None
    return function
