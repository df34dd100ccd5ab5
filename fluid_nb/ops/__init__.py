"""Op definitions and their NumPy/CuPy kernels, one family module each, in the op table of
:mod:`fluid_nb.framework.registry` (also reachable here as ``ops.registry``). Importing the
package defines no op: it hands the registry the index of which module defines which op
(``_index.py``, see ``_families.py``), and a module loads when one of its ops is first
looked up; ``all_ops()`` loads them all. The families import the framework and the tensor
types, never the runtime: kernels that drive the executor are attached from ``exec``."""
from ..framework import registry  # noqa: F401
from ..framework.registry import (all_ops, def_op, find, get, grad_maker,  # noqa: F401
                                  make_grad_ops)
from ._families import define_module, ungrouped
from ._index import API_KEYS, OPS_BY_MODULE

registry.define_on_demand(ungrouped(OPS_BY_MODULE), define_module, API_KEYS)
