"""``fluid.layers``: Fluid 1.x layer functions that append ops to the default programs.

Every name here builds the same op types, slots and variable names as Paddle Fluid 1.8
(``fc`` -> mul, elementwise_add, act; parameters ``fc_0.w_0``/``fc_0.b_0``)."""
from . import control_flow, io, loss, manip, math_op_patch, metric_op, nn, ops, tensor  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .manip import *  # noqa: F401,F403
from .metric_op import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403

math_op_patch.monkey_patch_variable()

__all__ = (control_flow.__all__ + io.__all__ + loss.__all__ + manip.__all__
           + metric_op.__all__ + nn.__all__ + ops.__all__ + tensor.__all__)
