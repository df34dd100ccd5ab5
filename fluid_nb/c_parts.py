"""The package's C and C++ parts (compiled by the install, ``hatch_build.py``): loading one,
or saying how to build it."""
import importlib
import os

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(module, what):
    """The extension module ``module`` (dotted name; its source is ``module``'s path with
    ``.c``, or ``.cc`` for C++), or an ImportError naming ``what`` it is and how to build
    it."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        stem = module.replace(".", "/")
        cpp = os.path.exists(os.path.join(_ROOT, stem + ".cc"))
        raise ImportError(
            f"fluid_nb: {what} ({stem}{'.cc' if cpp else '.c'}) is not built; install the "
            f"package (pip install -e .), which compiles it with the system's "
            f"{'C++' if cpp else 'C'} compiler ({missing})") from None
