"""Gradient clipping, as ops between backward and the updates.

- ``GradientClipByValue(max, min)``: ``clip`` each gradient elementwise;
- ``GradientClipByNorm(clip_norm)``: ``clip_by_norm`` each gradient;
- ``GradientClipByGlobalNorm(clip_norm)``: scale all gradients by
  ``clip_norm / max(global_norm, clip_norm)`` with ``global_norm = sqrt(sum ||g||^2)``.

Pass one as ``grad_clip=`` to an optimizer, or register it for parameters with
``set_gradient_clip`` (Fluid 1.x style).
"""
from ..autodiff.backward import OP_ROLE_BACKWARD
from ..errors import InvalidArgument, InvalidType, expected
from ..framework import unique_name
from ..tensor.dtypes import VarType
from ..framework.program import default_main_program

_ROLE = {"op_role": OP_ROLE_BACKWARD}


def _new_var(block, base, like, shape=None):
    return block.create_var(name=unique_name.generate(base),
                            shape=like.shape if shape is None else shape, dtype=like.dtype)


def _check_number(where, name, value, low=None):
    from .layers.arg_checks import check, real_in
    check(where, name, value, real_in(low))


class GradientClipBase:
    """Clips each gradient on its own; subclasses define ``_clip(param, grad)``. Pairs
    whose gradient is None are left out of the result.

    ``need_clip(param) -> bool`` (Fluid 1.8) picks the parameters whose gradients are
    clipped; None clips all of them. A parameter made with ``ParamAttr(need_clip=False)``
    is never clipped."""

    def __init__(self, need_clip=None):
        if need_clip is not None and not callable(need_clip):
            raise InvalidType(expected(type(self).__name__, "need_clip", "None or a function "
                                       "of a Parameter returning bool", type(need_clip).__name__))
        self._need_clip = need_clip

    def _clips(self, param, grad):
        return (grad is not None and getattr(param, "need_clip", True)
                and (self._need_clip is None or bool(self._need_clip(param))))

    def __call__(self, params_grads):
        # pairs without a gradient are dropped, as Fluid 1.8's clips drop them
        return [(p, self._clip(p, g)) if self._clips(p, g) else (p, g)
                for p, g in params_grads if g is not None]


class GradientClipByValue(GradientClipBase):
    def __init__(self, max, min=None, need_clip=None):
        super().__init__(need_clip)
        _check_number("GradientClipByValue", "max", max)
        if min is not None:
            _check_number("GradientClipByValue", "min", min)
        if min is None:
            min = -max
        if min > max:
            raise InvalidArgument(f"GradientClipByValue: min expected <= max, but received "
                                  f"min={min}, max={max}")
        self.max, self.min = float(max), float(min)

    def _clip(self, param, grad):
        block = grad.block
        out = _new_var(block, grad.name + "_clipped", grad)
        block.append_op(type="clip", inputs={"X": [grad]}, outputs={"Out": [out]},
                        attrs={"min": self.min, "max": self.max, **_ROLE})
        return out


class GradientClipByNorm(GradientClipBase):
    def __init__(self, clip_norm, need_clip=None):
        super().__init__(need_clip)
        _check_number("GradientClipByNorm", "clip_norm", clip_norm, 0.0)
        self.clip_norm = float(clip_norm)

    def _clip(self, param, grad):
        block = grad.block
        out = _new_var(block, grad.name + "_clipped", grad)
        block.append_op(type="clip_by_norm", inputs={"X": [grad]}, outputs={"Out": [out]},
                        attrs={"max_norm": self.clip_norm, **_ROLE})
        return out


def _norm_input(block, grad):
    """What a gradient's norm is taken of: the gradient itself, or for a sparse one
    (SelectedRows, as a sparse embedding's) its values with repeated rows merged
    (``merge_selected_rows`` then ``get_tensor_from_selected_rows``), as Fluid does."""
    if grad.type != VarType.SELECTED_ROWS:
        return grad
    merged = block.create_var(name=unique_name.generate(grad.name + "_merged"),
                              shape=grad.shape, dtype=grad.dtype,
                              type=VarType.SELECTED_ROWS)
    block.append_op(type="merge_selected_rows", inputs={"X": [grad]},
                    outputs={"Out": [merged]}, attrs=dict(_ROLE))
    values = _new_var(block, grad.name + "_merged_values", grad)
    block.append_op(type="get_tensor_from_selected_rows", inputs={"X": [merged]},
                    outputs={"Out": [values]}, attrs=dict(_ROLE))
    return values


class GradientClipByGlobalNorm(GradientClipBase):
    def __init__(self, clip_norm, group_name="default_group", need_clip=None):
        super().__init__(need_clip)
        _check_number("GradientClipByGlobalNorm", "clip_norm", clip_norm, 0.0)
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def __call__(self, params_grads):
        params_grads = [(p, g) for p, g in params_grads if g is not None]
        clipped = [(p, g) for p, g in params_grads if self._clips(p, g)]
        if not clipped:
            return params_grads
        block = clipped[0][1].block
        squares = []
        for _, grad in clipped:
            sq = _new_var(block, grad.name + "_squared_norm", grad, shape=(1,))
            block.append_op(type="squared_l2_norm", inputs={"X": [_norm_input(block, grad)]},
                            outputs={"Out": [sq]}, attrs=dict(_ROLE))
            squares.append(sq)
        like = clipped[0][1]
        total = _new_var(block, "global_norm_squared", like, shape=(1,))
        block.append_op(type="sum", inputs={"X": squares}, outputs={"Out": [total]},
                        attrs=dict(_ROLE))
        norm = _new_var(block, "global_norm", like, shape=(1,))
        block.append_op(type="sqrt", inputs={"X": [total]}, outputs={"Out": [norm]},
                        attrs=dict(_ROLE))
        limit = _new_var(block, "clip_norm", like, shape=(1,))
        block.append_op(type="fill_constant", outputs={"Out": [limit]},
                        attrs={"shape": [1], "value": self.clip_norm, "dtype": int(like.dtype),
                               **_ROLE})
        denom = _new_var(block, "global_norm_max", like, shape=(1,))
        block.append_op(type="elementwise_max", inputs={"X": [norm], "Y": [limit]},
                        outputs={"Out": [denom]}, attrs=dict(_ROLE))
        scale = _new_var(block, "global_norm_scale", like, shape=(1,))
        block.append_op(type="elementwise_div", inputs={"X": [limit], "Y": [denom]},
                        outputs={"Out": [scale]}, attrs=dict(_ROLE))
        result = []
        scaled = {}
        for param, grad in clipped:
            if grad.type == VarType.SELECTED_ROWS:  # stays sparse: its values scaled
                out = block.create_var(name=unique_name.generate(grad.name + "_clipped"),
                                       shape=grad.shape, dtype=grad.dtype,
                                       type=VarType.SELECTED_ROWS)
                block.append_op(type="scale", inputs={"X": [grad], "ScaleTensor": [scale]},
                                outputs={"Out": [out]}, attrs=dict(_ROLE))
            else:
                out = _new_var(block, grad.name + "_clipped", grad)
                block.append_op(type="elementwise_mul", inputs={"X": [grad], "Y": [scale]},
                                outputs={"Out": [out]}, attrs=dict(_ROLE))
            scaled[param.name] = out
        for param, grad in params_grads:
            result.append((param, scaled.get(param.name, grad)))
        return result


# Fluid 1.x: clips registered per program with set_gradient_clip, applied by minimize
_registered = {}


def set_gradient_clip(clip, param_list=None, program=None):
    program = default_main_program() if program is None else program
    params = param_list if param_list is not None else program.global_block().all_parameters()
    names = [p if isinstance(p, str) else p.name for p in params]
    _registered[id(program)] = (program, clip, set(names))


def append_gradient_clip_ops(params_grads):
    if not params_grads:
        return params_grads
    program = params_grads[0][0].block.program
    entry = _registered.get(id(program))
    if entry is None or entry[0] is not program:
        return params_grads
    _, clip, names = entry
    chosen = [(p, g) for p, g in params_grads if p.name in names]
    clipped = dict((p.name, g) for p, g in clip(chosen))
    return [(p, clipped.get(p.name, g)) for p, g in params_grads]


ErrorClipByValue = GradientClipByValue
