"""Build hook: compiles the memory arena's C core (fluid_nb/memory/_arena.c) into an
extension module next to it, for wheels and editable installs alike."""
import os
import shlex
import subprocess
import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = os.path.join("fluid_nb", "memory", "_arena.c")


def compile_arena(root):
    """Compile the arena into fluid_nb/memory/_arena<EXT_SUFFIX>; returns its path."""
    import numpy
    target = os.path.join("fluid_nb", "memory", "_arena" + sysconfig.get_config_var("EXT_SUFFIX"))
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    command = compiler[:1] + ["-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
                              "-I" + numpy.get_include(),
                              os.path.join(root, SOURCE), "-o", os.path.join(root, target),
                              "-lpthread"]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise RuntimeError(
            f"fluid_nb: building the memory arena ({SOURCE}) needs a C compiler, and "
            f"{compiler[0]!r} was not found; install one (Debian/Ubuntu: apt-get install gcc) "
            "or name it in the CC environment variable") from None
    except subprocess.CalledProcessError as failed:
        raise RuntimeError(f"fluid_nb: compiling the memory arena failed:\n"
                           f"{' '.join(command)}\n{failed.stderr}") from None
    return target


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        target = compile_arena(self.root)
        build_data["artifacts"].append(target)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
