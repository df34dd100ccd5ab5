"""The runtime library every compiled program links (``runtime/fluid_native_runtime.cc``):
the single-threaded matrix product and the LoD and loop kernels' template instances,
compiled once per compiler instead of once per program, so a program's build optimises
only its own functions (a cold build of W1 1.24 -> 0.79 s, W3 6.1 -> 4.6 s).

Its name holds a hash of what went into it (the compiler, the flags, the runtime's
sources): a program links it by that name and finds it beside itself in the build cache
(``$ORIGIN``), so a library built by one compiler is never loaded by a program another
built. The install builds it (``hatch_build.py`` loads this file by path: it imports
nothing but the standard library) and :func:`fluid_nb.rewriters.native.build.runtime_library`
copies that build into the cache when the names agree, or builds it there on first use.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
RUNTIME = HERE / "runtime"
SOURCE = RUNTIME / "fluid_native_runtime.cc"
#: the install's build, and the file holding the name it was built under
PACKAGED = HERE / "_fluid_native_runtime.so"
PACKAGED_NAME = HERE / "_fluid_native_runtime.name"

#: the flags of the programs that link it (build.flags; the BLAS integer is one it never
#: uses), and the headers' folder
FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c++17", "-shared", "-fPIC",
         "-DFLUID_BLAS_INT=int64_t"]


def compiler_command():
    """The C++ compiler programs are built with: ``$CXX``, else ``c++``."""
    return os.environ.get("CXX") or "c++"


def version_line(command):
    """The first line ``command --version`` prints."""
    lines = subprocess.run([command, "--version"], capture_output=True, text=True,
                           timeout=30).stdout.splitlines()
    return lines[0] if lines else command


def identity(command, version):
    """What the compiler ``command`` (whose version line is ``version``) is: its file
    (links resolved: ``c++`` and ``g++`` are often one program) and its version without
    the name it was called by."""
    found = shutil.which(command)
    path = os.path.realpath(found) if found else command
    return f"{path} {version.split(' ', 1)[-1]}"


def file_name(compiler_identity):
    """The library's file name (its soname too) for a compiler: a hash of the compiler,
    the flags and every runtime source."""
    sources = b"".join(path.read_bytes() for path in sorted(RUNTIME.iterdir())
                       if path.suffix in (".h", ".cc"))
    digest = hashlib.sha256("\0".join([compiler_identity, *FLAGS]).encode("utf-8") + b"\0"
                            + sources).hexdigest()[:24]
    return f"fluid_runtime_{digest}.so"


def arguments(output, name):
    """The compiler's arguments that build the library at ``output`` under ``name``."""
    return [*FLAGS, f"-I{RUNTIME}", str(SOURCE), "-o", str(output), f"-Wl,-soname,{name}"]
