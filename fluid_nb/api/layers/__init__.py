"""``fluid.layers``: Fluid 1.x layer functions that append ops to the default programs.

Every name here builds the same op types, slots and variable names as Paddle Fluid 1.8
(``fc`` -> mul, elementwise_add, act; parameters ``fc_0.w_0``/``fc_0.b_0``)."""
from . import (control_flow, creation, crf, decoding, detection, detection_fpn,  # noqa: F401
               detection_heads, detection_losses, detection_training, distributions, io, loss,
               manip, math, math_op_patch, metric_op, nn, ops, rnn, rnn_cells, rnn_decoders,
               rnn_layers, rnn_lstm, sequence, tensor)
from ...framework.transaction import wrap_module

# every public layer is a transaction: if it fails, the programs are as they were before it
# (wrapped in its own module too, so calls between layers and fluid.data pass the same point)
# the modules, kept apart: the star imports below bring names (``rnn``) that shadow some
_MODULES = (control_flow, creation, crf, decoding, detection, detection_fpn, detection_heads,
            detection_losses, detection_training, distributions, io, loss, manip, math,
            metric_op, nn, ops, rnn, rnn_cells, rnn_decoders, rnn_layers, rnn_lstm, sequence,
            tensor)
for _module in _MODULES:
    if _module is not distributions:  # (classes, which carry no transaction of their own)
        wrap_module(_module, _module.__all__)
wrap_module(io, ["fluid_data"])
from .control_flow import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .crf import *  # noqa: F401,F403
from .decoding import *  # noqa: F401,F403
from .detection import *  # noqa: F401,F403
from .detection_fpn import *  # noqa: F401,F403
from .detection_heads import *  # noqa: F401,F403
from .detection_losses import *  # noqa: F401,F403
from .detection_training import *  # noqa: F401,F403
from .distributions import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .manip import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .metric_op import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .rnn_cells import *  # noqa: F401,F403
from .rnn_decoders import *  # noqa: F401,F403
from .rnn_layers import *  # noqa: F401,F403
from .rnn_lstm import *  # noqa: F401,F403
from .sequence import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
from . import learning_rate_scheduler  # noqa: F401
from .learning_rate_scheduler import (  # noqa: F401
    cosine_decay, exponential_decay, inverse_time_decay, linear_lr_warmup, natural_exp_decay,
    noam_decay, piecewise_decay, polynomial_decay)

_LR_SCHEDULES = ["exponential_decay", "natural_exp_decay", "inverse_time_decay",
                 "polynomial_decay", "piecewise_decay", "noam_decay", "cosine_decay",
                 "linear_lr_warmup"]

math_op_patch.monkey_patch_variable()

__all__ = [name for _module in _MODULES for name in _module.__all__] + _LR_SCHEDULES

# Fluid 1.8's dtype checks, applied to the layers it checks (here and where each is defined)
import sys as _sys  # noqa: E402
from . import dtype_rules  # noqa: E402
dtype_rules.apply(globals(), [_module for _name, _module in list(_sys.modules.items())
                              if _name.startswith(__name__ + ".")])
