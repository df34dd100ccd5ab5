"""The notebook side: ``%load_ext fluid_nb`` (``%%fluid``/``%fluid``) and rich display.

Importing this package attaches ``_repr_html_``/``_repr_mimebundle_`` to Variable, Program,
LoDTensor and Scope; IPython itself is imported only by :func:`load_ipython_extension`.
"""
from . import display

display.install()


def load_ipython_extension(ipython, fluid):
    """Register ``%%fluid`` and ``%fluid`` and put ``fluid`` (the package, which
    ``%load_ext fluid_nb`` hands in from the top) in the user namespace."""
    from .magics import FluidMagics
    ipython.register_magics(FluidMagics)
    ipython.user_ns.setdefault("fluid", fluid)


def unload_ipython_extension(ipython):
    """Nothing to undo beyond what IPython drops itself."""
