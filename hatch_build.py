"""Build hook: compiles the package's C and C++ parts into extension modules next to their
sources, for wheels and editable installs alike: the memory arena's core
(fluid_nb/memory/_arena.c), LoDTensor's constructor and a feed's columns stacked
(fluid_nb/tensor/_tensor.c), the parts of every appended op's record
(fluid_nb/framework/_op_record.c), the interpreter's commonest steps
(fluid_nb/exec/_steps.c), the check of a program file's bytes
(fluid_nb/proto/_wire.c) and the reading and writing of its records
(fluid_nb/proto/_program_records.c), the call of a compiled program's step
(fluid_nb/rewriters/native/_bound_step.c) and the interpreter's fused optimizer updates
(fluid_nb/ops/_fused_updates.cc, C++: it runs the element update compiled programs run,
from the native code generator's runtime headers), dropout's draw in one pass
(fluid_nb/ops/_draws.cc, C++ for the -O3 its loops vectorise with), the interpreter's
layer norm and softmax (fluid_nb/ops/_norms.cc, C++: the runtime headers' rows), the
kernels' C parts (fluid_nb/ops/_special.c: the special functions NumPy lacks, a formula of
one ufunc run from C); and the runtime library
compiled programs link (fluid_nb/rewriters/native/runtime/fluid_native_runtime.cc, built as a build
of a program would build it: fluid_nb/rewriters/native/runtime_library.py says how)."""
import importlib.util
import os
import shlex
import subprocess
import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: (source, what it is, uses NumPy's C API)
SOURCES = ((os.path.join("fluid_nb", "memory", "_arena.c"), "the memory arena", True),
           (os.path.join("fluid_nb", "tensor", "_tensor.c"), "LoDTensor's C parts", True),
           (os.path.join("fluid_nb", "framework", "_op_record.c"), "an op record's C parts", False),
           (os.path.join("fluid_nb", "exec", "_steps.c"), "the interpreter's steps", True),
           (os.path.join("fluid_nb", "proto", "_wire.c"), "the wire walk's check", False),
           (os.path.join("fluid_nb", "proto", "_program_records.c"),
            "the program file reader and writer", False),
           (os.path.join("fluid_nb", "rewriters", "native", "_bound_step.c"),
            "a compiled program's step call", True),
           (os.path.join("fluid_nb", "ops", "_fused_updates.cc"),
            "the interpreter's fused optimizer updates", True),
           (os.path.join("fluid_nb", "ops", "_draws.cc"), "dropout's draw in one pass", True),
           (os.path.join("fluid_nb", "ops", "_norms.cc"),
            "the interpreter's layer norm and softmax", True),
           (os.path.join("fluid_nb", "ops", "_special.c"), "the kernels' C parts", True))
#: the native code generator's runtime headers, which a C++ part includes
RUNTIME = os.path.join("fluid_nb", "rewriters", "native", "runtime")


def compile_extension(root, source, what, with_numpy):
    """Compile ``source`` (x/y/_name.c, or .cc for C++) into x/y/_name<EXT_SUFFIX>; returns
    its path."""
    stem, language = os.path.splitext(source)
    target = stem + sysconfig.get_config_var("EXT_SUFFIX")
    includes = ["-I" + sysconfig.get_paths()["include"]]
    if with_numpy:
        import numpy
        includes.append("-I" + numpy.get_include())
    if language == ".cc":
        # the flags compiled programs are built with (their sqrt loops vectorise; no
        # contraction into FMAs, so the values are the NumPy formula's, bit for bit)
        variable, kind, install = "CXX", "a C++ compiler", "g++"
        flags = ["-O3", "-std=c++17", "-fno-math-errno", "-fno-trapping-math",
                 "-ffp-contract=off", "-I" + os.path.join(root, RUNTIME)]
    else:
        variable, kind, install = "CC", "a C compiler", "gcc"
        flags = ["-O2"]
    compiler = shlex.split(os.environ.get(variable) or sysconfig.get_config_var(variable)
                           or ("c++" if variable == "CXX" else "cc"))
    command = compiler[:1] + [*flags, "-shared", "-fPIC", *includes,
                              os.path.join(root, source), "-o", os.path.join(root, target),
                              "-lpthread", "-lm"]
    run_compiler(command, f"{what} ({source})", kind, install, variable)
    return target


def run_compiler(command, what, kind="a C++ compiler", install="g++", variable="CXX"):
    """Run ``command``, a compiler building ``what``: a compiler that is missing or fails
    is a RuntimeError saying what to install or showing what it said."""
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise RuntimeError(
            f"fluid_nb: building {what} needs {kind}, and {command[0]!r} was not "
            f"found; install one (Debian/Ubuntu: apt-get install {install}) or name it in the "
            f"{variable} environment variable") from None
    except subprocess.CalledProcessError as failed:
        raise RuntimeError(f"fluid_nb: compiling {what} failed:\n"
                           f"{' '.join(command)}\n{failed.stderr}") from None


def compile_runtime_library(root):
    """Build the native code generator's runtime library with the compiler and flags a
    program's build uses, under the name a build looks for; returns the paths written
    (the library and the file holding its name)."""
    path = os.path.join(root, "fluid_nb", "rewriters", "native", "runtime_library.py")
    spec = importlib.util.spec_from_file_location("fluid_nb_runtime_library", path)
    runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runtime)
    command = runtime.compiler_command()
    what = f"the native runtime library ({os.path.relpath(str(runtime.SOURCE), root)})"
    run_compiler([command, "--version"], what)  # a missing compiler, said as for the others
    name = runtime.file_name(runtime.identity(command, runtime.version_line(command)))
    run_compiler([command, *runtime.arguments(runtime.PACKAGED, name)], what)
    with open(runtime.PACKAGED_NAME, "w") as file:
        file.write(name + "\n")
    return [os.path.relpath(str(p), root) for p in (runtime.PACKAGED, runtime.PACKAGED_NAME)]


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        for source, what, with_numpy in SOURCES:
            build_data["artifacts"].append(compile_extension(self.root, source, what,
                                                             with_numpy))
        build_data["artifacts"] += compile_runtime_library(self.root)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
