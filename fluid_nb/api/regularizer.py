"""Weight decay as ops on the gradient: ``grad += coeff * param`` (L2) or
``grad += coeff * sign(param)`` (L1). A parameter's own regularizer wins over the
optimizer's."""
from ..autodiff.backward import OP_ROLE_BACKWARD
from ..errors import InvalidType
from ..framework import unique_name
from ..tensor.dtypes import VarType

#: Paddle's suffix for a sparse gradient made dense by regularization
NEW_GRAD_SUFFIX = "@NEWGRAD@"


def _check_coeff(where, coeff):
    from .layers.arg_checks import check, real_in
    check(where, "regularization_coeff", coeff, real_in(0.0))


class WeightDecayRegularizer:
    def __call__(self, param, grad, block):
        raise NotImplementedError


class L2Decay(WeightDecayRegularizer):
    """``grad + coeff * param``."""

    def __init__(self, regularization_coeff=0.0):
        if not isinstance(regularization_coeff, (int, float)):
            raise InvalidType(f"L2Decay: regularization_coeff expected float, but received "
                              f"{type(regularization_coeff).__name__}")
        _check_coeff("L2Decay", regularization_coeff)
        self._coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        decay = block.create_var(name=unique_name.generate(f"{param.name}_l2_decay"),
                                 shape=param.shape, dtype=param.dtype)
        block.append_op(type="scale", inputs={"X": [param]}, outputs={"Out": [decay]},
                        attrs={"scale": self._coeff, "op_role": OP_ROLE_BACKWARD})
        return decay

    def __str__(self):
        return f"L2Decay, regularization_coeff={self._coeff:f}"


class L1Decay(WeightDecayRegularizer):
    """``grad + coeff * sign(param)``."""

    def __init__(self, regularization_coeff=0.0):
        _check_coeff("L1Decay", regularization_coeff)
        self._coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        sign = block.create_var(name=unique_name.generate(f"{param.name}_sign"),
                                shape=param.shape, dtype=param.dtype)
        block.append_op(type="sign", inputs={"X": [param]}, outputs={"Out": [sign]},
                        attrs={"op_role": OP_ROLE_BACKWARD})
        decay = block.create_var(name=unique_name.generate(f"{param.name}_l1_decay"),
                                 shape=param.shape, dtype=param.dtype)
        block.append_op(type="scale", inputs={"X": [sign]}, outputs={"Out": [decay]},
                        attrs={"scale": self._coeff, "op_role": OP_ROLE_BACKWARD})
        return decay

    def __str__(self):
        return f"L1Decay, regularization_coeff={self._coeff:f}"


L2DecayRegularizer = L2Decay
L1DecayRegularizer = L1Decay


def append_regularization_ops(params_grads, regularization=None):
    """Add each parameter's decay term to its gradient with a ``sum`` op, as Paddle does: a
    dense gradient is summed in place (``Out`` is the gradient itself); a sparse
    (SelectedRows) one, being a different kind, is summed into the dense ``<grad>@NEWGRAD@``.
    The decay term covers the whole parameter, so with a sparse gradient every row decays."""
    result = []
    for param, grad in params_grads:
        regularizer = getattr(param, "regularizer", None) or regularization
        if grad is None or regularizer is None:
            result.append((param, grad))
            continue
        block = grad.block
        term = regularizer(param, grad, block)
        new_grad = grad
        if grad.type == VarType.SELECTED_ROWS:
            new_grad = block.create_var(name=grad.name + NEW_GRAD_SUFFIX, shape=param.shape,
                                        dtype=param.dtype, lod_level=param.lod_level,
                                        type=VarType.LOD_TENSOR)
        block.append_op(type="sum", inputs={"X": [grad, term]}, outputs={"Out": [new_grad]},
                        attrs={"op_role": OP_ROLE_BACKWARD})
        result.append((param, new_grad))
    return result
