"""Op definitions and their NumPy/CuPy kernels, one family module each; importing the
package registers every op in the op table (:mod:`fluid_nb.framework.registry`, also
reachable here as ``ops.registry``). The families import the framework and the tensor
types, never the runtime: kernels that drive the executor are attached from ``exec``."""
from ..framework import registry  # noqa: F401
from ..framework.registry import (all_ops, def_op, find, get, grad_maker,  # noqa: F401
                                  make_grad_ops)
from . import _families  # noqa: F401  (registers every family)
