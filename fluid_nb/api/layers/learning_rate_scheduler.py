"""Learning-rate schedules as ops, re-exported as ``fluid.layers.<name>``.

Each schedule reads Fluid's global step counter ``@LR_DECAY_COUNTER@`` (an int64 that an
``increment`` op at the start of the main program advances once per run, starting at 0 for
the first run, as Fluid's ``autoincreased_step_counter(begin=0)`` does) and computes the rate
with ordinary ops, so the schedule is part of the program: it is saved, shown and run like
any other op. ``piecewise_decay`` uses comparisons instead of Fluid's ``Switch`` block
(same values, no sub-blocks).
"""
import math

from ...autodiff.backward import OP_ROLE_LR_SCHED
from ...framework import unique_name
from ...tensor.dtypes import VarType
from ...framework.program import default_main_program, default_startup_program

COUNTER_NAME = "@LR_DECAY_COUNTER@"
_ROLE = {"op_role": OP_ROLE_LR_SCHED}


def _block():
    return default_main_program().global_block()


def _tmp(prefix="learning_rate", dtype=VarType.FP32):
    return _block().create_var(name=unique_name.generate(prefix), shape=(1,), dtype=dtype)


def _op(type, inputs, attrs=None, dtype=VarType.FP32):
    out = _tmp(dtype=dtype)
    _block().append_op(type=type, inputs=inputs, outputs={"Out": [out]},
                       attrs={**(attrs or {}), **_ROLE})
    return out


def _const(value):
    out = _tmp()
    _block().append_op(type="fill_constant", outputs={"Out": [out]},
                       attrs={"shape": [1], "value": float(value), "dtype": int(VarType.FP32),
                              **_ROLE})
    return out


def _step_counter(begin=0):
    """The float32 global step: 0 on the first run, then 1, 2, ..."""
    main, startup = default_main_program(), default_startup_program()
    block = main.global_block()
    if not block.has_var(COUNTER_NAME):
        block.create_var(name=COUNTER_NAME, shape=(1,), dtype=VarType.INT64, persistable=True,
                         stop_gradient=True)
        sblock = startup.global_block()
        sblock.create_var(name=COUNTER_NAME, shape=(1,), dtype=VarType.INT64, persistable=True)
        sblock.append_op(type="fill_constant", outputs={"Out": [COUNTER_NAME]},
                         attrs={"shape": [1], "value": float(begin - 1),
                                "dtype": int(VarType.INT64)})
        block._prepend_op(type="increment", inputs={"X": [COUNTER_NAME]},
                          outputs={"Out": [COUNTER_NAME]}, attrs={"step": 1.0, **_ROLE})
    return _op("cast", {"X": [COUNTER_NAME]},
               {"in_dtype": int(VarType.INT64), "out_dtype": int(VarType.FP32)})


def _scale(x, scale=1.0, bias=0.0):
    return _op("scale", {"X": [x]}, {"scale": float(scale), "bias": float(bias)})


def _binary(type, x, y):
    return _op(type, {"X": [x], "Y": [y]})


def _unary(type, x, attrs=None):
    return _op(type, {"X": [x]}, attrs)


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr * decay_rate ^ (step / decay_steps)`` (the exponent floored when staircase)."""
    exponent = _scale(_step_counter(), 1.0 / decay_steps)
    if staircase:
        exponent = _unary("floor", exponent)
    return _scale(_binary("elementwise_pow", _const(decay_rate), exponent), learning_rate)


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr * exp(-decay_rate * step / decay_steps)``."""
    exponent = _scale(_step_counter(), 1.0 / decay_steps)
    if staircase:
        exponent = _unary("floor", exponent)
    return _scale(_unary("exp", _scale(exponent, -decay_rate)), learning_rate)


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr / (1 + decay_rate * step / decay_steps)``."""
    ratio = _scale(_step_counter(), 1.0 / decay_steps)
    if staircase:
        ratio = _unary("floor", ratio)
    return _binary("elementwise_div", _const(learning_rate), _scale(ratio, decay_rate, 1.0))


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle=False):
    """``(lr - end) * (1 - step / decay_steps) ^ power + end``; with ``cycle`` the horizon
    grows to the next multiple of ``decay_steps``, else ``step`` stops at ``decay_steps``."""
    step = _step_counter()
    if cycle:
        ratio = _unary("ceil", _scale(step, 1.0 / decay_steps))
        one = _const(1.0)
        ratio = _binary("elementwise_max", ratio, one)  # step 0 uses one period
        horizon = _scale(ratio, decay_steps)
    else:
        horizon = _const(decay_steps)
        step = _binary("elementwise_min", step, horizon)
    fraction = _scale(_binary("elementwise_div", step, horizon), -1.0, 1.0)
    decayed = _binary("elementwise_pow", fraction, _const(power))
    return _scale(decayed, learning_rate - end_learning_rate, end_learning_rate)


def piecewise_decay(boundaries, values):
    """``values[i]`` while ``boundaries[i-1] <= step < boundaries[i]``."""
    if len(values) != len(boundaries) + 1:
        from ...errors import InvalidArgument
        raise InvalidArgument(f"piecewise_decay: values expected len(boundaries) + 1 = "
                              f"{len(boundaries) + 1} entries, but received {len(values)}")
    step = _step_counter()
    # Fluid's Switch takes the first case with step < boundaries[i], else values[-1]. Built
    # from the last case back as lr = below * values[i] + (1 - below) * lr with below 0 or 1,
    # so each value comes out exactly (no sums of differences).
    lr = _const(values[-1])
    for boundary, value in reversed(list(zip(boundaries, values))):
        below = _op("less_than", {"X": [step], "Y": [_const(boundary)]}, dtype=VarType.BOOL)
        below = _op("cast", {"X": [below]},
                    {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.FP32)})
        lr = _binary("elementwise_add", _scale(below, value),
                     _binary("elementwise_mul", _scale(below, -1.0, 1.0), lr))
    return lr


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """``lr * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`` with the step
    counted from 1, as in the Transformer paper: the global step counter starts at 1 when
    noam_decay creates it (schedules built after it in the program share that count)."""
    step = _step_counter(begin=1)
    a = _unary("pow", step, {"factor": -0.5})
    b = _scale(step, warmup_steps ** -1.5)
    return _scale(_binary("elementwise_min", a, b), learning_rate * d_model ** -0.5)


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """``lr * 0.5 * (cos(epoch * pi / epochs) + 1)`` with ``epoch = floor(step /
    step_each_epoch)``."""
    epoch = _unary("floor", _scale(_step_counter(), 1.0 / step_each_epoch))
    cosine = _unary("cos", _scale(epoch, math.pi / epochs))
    return _scale(cosine, 0.5 * learning_rate, 0.5 * learning_rate)


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """Linear from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then ``learning_rate``
    (a float or a schedule Variable)."""
    step = _step_counter()
    warm = _scale(step, (end_lr - start_lr) / float(warmup_steps), start_lr)
    after = learning_rate if not isinstance(learning_rate, (int, float)) else _const(learning_rate)
    done = _op("greater_equal", {"X": [step], "Y": [_const(warmup_steps)]}, dtype=VarType.BOOL)
    done = _op("cast", {"X": [done]}, {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.FP32)})
    keep = _scale(done, -1.0, 1.0)
    return _binary("elementwise_add", _binary("elementwise_mul", warm, keep),
                   _binary("elementwise_mul", after, done))
