"""The package's C parts (compiled by the install, ``hatch_build.py``): loading one, or
saying how to build it."""
import importlib


def load(module, what):
    """The extension module ``module`` (dotted name; its source is ``module``'s path with
    ``.c``), or an ImportError naming ``what`` it is and how to build it."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        source = module.replace(".", "/") + ".c"
        raise ImportError(
            f"fluid_nb: {what} ({source}) is not built; install the package (pip install -e "
            f".), which compiles it with the system's C compiler ({missing})") from None
