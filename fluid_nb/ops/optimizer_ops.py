"""Optimizer update ops (sgd, momentum, adam, ...) and learning-rate schedule helpers.

An update op reads a parameter, its gradient, the learning rate and its accumulators and
returns their new values. Paddle names each output after its input (ParamOut for Param,
Moment1Out for Moment1) and programs bind both to the same variable, so storing the
result is the in-place update. Kernels compute in the parameter's dtype with the formulas
of Paddle's kernels (quoted in each op's doc).

Sparse gradients (a SelectedRows Grad, from ``lookup_table`` with ``is_sparse``) are merged
first (duplicate rows summed). Then, as Paddle:
- sgd, adagrad and adam with ``lazy_mode`` update only the rows present;
- momentum, rmsprop, adam and lamb update every row, a missing row's gradient being 0;
- an empty SelectedRows leaves everything unchanged (Paddle's sparse kernels return early).
Paddle has no sparse kernel for adamax, adadelta and decayed_adagrad; here they take the
gradient as dense with missing rows 0.

With ``multi_precision`` and a MasterParam (the float32 copy of a float16 parameter) the
update runs on MasterParam; ParamOut is its cast to Param's dtype and MasterParamOut the
new master copy.
"""

import os

import numpy as np

from .. import c_parts
from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, SelectedRows
from ..tensor.dtypes import VarType
from ..framework.infer import dims_match
from .clip_ops import merged_rows
from .common import compiled_elementwise
from ..framework.registry import attach_commit, def_op, grad_maker, same_shape


# --- reading runtime inputs -----------------------------------------------------------------
def _array(t):
    """The array of a runtime input (None stays None)."""
    return t.array if isinstance(t, LoDTensor) else t


def _value(t):
    """The single value of a one-element tensor, as a Python number (host arrays only)."""
    return _array(t).reshape(-1)[0].item()


def _scalar(ctx, t):
    """The single value of a one-element tensor for arithmetic: a Python number on the host
    (the cheapest there), a float64 0-d array on a device (it stays there: reading it would
    copy to the host every step). float64 either way, so scalar arithmetic agrees."""
    if ctx.xp is np:
        return _value(t)
    return _array(t).reshape(()).astype(np.float64)


def _as(value, dtype):
    """A scalar ready to meet arrays of ``dtype``: a Python number as it is (NumPy casts it
    to the array's type), an array scalar cast to ``dtype`` (a float64 one would promote the
    result)."""
    return value.astype(dtype) if hasattr(value, "astype") else value


def _norm(xp, x):
    """||x|| (summed in x's dtype, as Paddle's kernels) as a float64 array scalar."""
    return xp.sqrt(xp.sum(x * x)).astype(np.float64)


def _device_flag(ctx, t):
    """A SkipUpdate-like flag that stays on a device (a 0-d bool array there; None on the
    host, where reading it is free): the update runs and ``xp.where`` keeps the inputs."""
    if t is None or ctx.xp is np:
        return None
    return _array(t).reshape(()).astype(bool)


def _dense_grad(xp, grad, param, where):
    """Grad as a dense array shaped like ``param``: a SelectedRows is merged and its missing
    rows are 0."""
    if not isinstance(grad, SelectedRows):
        return _array(grad)
    rows, values = merged_rows(xp, grad, where, param.shape[0])
    dense = xp.zeros(param.shape, dtype=param.dtype)
    if rows.size:
        dense[xp.asarray(rows)] = values.reshape((rows.size,) + param.shape[1:])
    return dense


def _is_empty_sparse(grad):
    return isinstance(grad, SelectedRows) and not grad.rows()


def _base(ctx, param, master):
    """What the update applies to: MasterParam under multi_precision, else Param."""
    if ctx.attrs.get("multi_precision") and master is not None:
        return master
    return param


def _param_outs(ctx, new, param, master):
    """(ParamOut, MasterParamOut) from the updated values ``new``."""
    use_master = ctx.attrs.get("multi_precision") and master is not None
    return (new.astype(param.dtype, copy=False),
            new if use_master and ctx.wants("MasterParamOut") else None)


def _unchanged(*arrays):
    return tuple(None if a is None else a.copy() for a in arrays)


# --- compile-time checks shared by every update op ------------------------------------------
def _numel(shape):
    total = 1
    for d in shape:
        if d < 0:
            return -1
        total *= d
    return total


def _update_infer(state, scalars=("LearningRate",), required=(), scalar_at_least=False):
    """infer_shape of an update op: a dense Grad and each ``state`` input have Param's shape;
    each ``scalars`` input holds one value (at least one with ``scalar_at_least``); every
    ``<X>Out`` output gets ``<X>``'s shape and dtype."""
    def infer(ctx):
        attrs = ctx.attrs()
        for name in required:
            if name not in attrs:
                ctx.fail(f"attribute '{name}'", "a float", "none")
        shape = ctx.input_shape("Param")
        like = list(state)
        if ctx.has_input("Grad") and ctx.input_var_type("Grad") != VarType.SELECTED_ROWS:
            like.insert(0, "Grad")
        # (the messages formatted only for a failure: every update op of a program passes)
        for slot in like:
            if not ctx.has_input(slot):
                continue
            got = ctx.input_shape(slot)
            if got != shape and not (len(got) == len(shape) and
                                     all(dims_match(a, b) for a, b in zip(got, shape))):
                ctx.fail(f"shape of input '{slot}'", f"{list(shape)} (the shape of Param)",
                         list(got))
        for slot in scalars:
            if not ctx.has_input(slot):
                continue
            n = _numel(ctx.input_shape(slot))
            if not (n < 0 or (n >= 1 if scalar_at_least else n == 1)):
                ctx.fail(f"input '{slot}'", "a tensor of one element",
                         f"shape {list(ctx.input_shape(slot))}")
        ctx.set_output("ParamOut", shape, ctx.input_dtype("Param"))
        for slot in list(state) + list(scalars):
            if ctx.has_input(slot):
                ctx.set_output(slot + "Out", ctx.input_shape(slot), ctx.input_dtype(slot))
    return infer


#: the fused host updates: SGD's in one call, Adam's in one pass (the formulas' values, bit
#: for bit: ops/_fused_updates.cc)
_fused = c_parts.load("fluid_nb.ops._fused_updates", "the fused optimizer updates")


# --- sgd ------------------------------------------------------------------------------------------
def _sgd_kernel(ctx, param, lr, grad, master):
    if master is None and grad.__class__ is LoDTensor:  # dense, no master copy: the usual
        p, rate = param.array, lr.array
        # one C call for plain host arrays (the formula's values; NotImplemented otherwise)
        new = _fused.sgd(p, rate, grad.array, "Param" in ctx.donated)
        if new is not NotImplemented:
            return new, None
        step = (rate.reshape(()) if rate.ndim else rate) * grad.array
        if "Param" in ctx.donated and step.dtype == p.dtype:
            return ctx.xp.subtract(p, step, out=p), None
        return (p - step).astype(p.dtype, copy=False), None
    if isinstance(param, SelectedRows):
        return _sgd_sparse_param(ctx, param, lr, grad), None
    xp = ctx.xp
    p, master = _array(param), _array(master)
    base = _base(ctx, p, master)
    rate = _as(_scalar(ctx, lr), base.dtype)
    if isinstance(grad, SelectedRows):
        rows, values = merged_rows(xp, grad, "sgd", base.shape[0])
        new = base.copy()
        if rows.size:
            index = xp.asarray(rows)
            new[index] = base[index] - rate * values.reshape((rows.size,) + base.shape[1:])
    else:
        new = base - rate * _array(grad)
    return _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)


def _sgd_sparse_param(ctx, param, lr, grad):
    """A SelectedRows Param (a block of a distributed table): each row of the SelectedRows
    Grad updates the Param row that holds the same id (Param.index(id))."""
    if not isinstance(grad, SelectedRows):
        raise InvalidArgument(expected("sgd", "input 'Grad'", "a SelectedRows (Param is one)",
                                       type(grad).__name__))
    values = param.get_tensor().array
    new = values.copy()
    if grad.rows():
        rows, update = merged_rows(ctx.xp, grad, "sgd")
        if update.shape[1:] != values.shape[1:]:
            raise InvalidArgument(expected("sgd", "row width of Grad",
                                           f"{list(values.shape[1:])} (as Param's)",
                                           list(update.shape[1:])))
        positions = ctx.xp.asarray([param.index(row) for row in rows.tolist()])
        new[positions] = values[positions] - _as(_scalar(ctx, lr), values.dtype) * update
    return SelectedRows(param.rows(), param.height(), LoDTensor(new))


def_op("sgd", inputs=["Param", "LearningRate", "Grad", "MasterParam?"],
       outputs=["ParamOut", "MasterParamOut?"], attrs={"multi_precision": ("bool", False)},
       infer_shape=_update_infer(("MasterParam",)), kernel=_sgd_kernel, lod_aware=True,
       in_place={"ParamOut": "Param"},
       doc="ParamOut = Param - LearningRate * Grad; a SelectedRows Grad updates only its "
           "rows (repeated rows add up); with a SelectedRows Param, the Param rows holding "
           "Grad's row ids.")


# --- momentum -------------------------------------------------------------------------------------
def _momentum_kernel(ctx, param, grad, velocity, lr, master):
    xp, a = ctx.xp, ctx.attrs
    p, v, master = _array(param), _array(velocity), _array(master)
    if _is_empty_sparse(grad):
        out_p, out_v = _unchanged(p, v)
        return out_p, out_v, None
    base = _base(ctx, p, master)
    mu, rate = a["mu"], _as(_scalar(ctx, lr), base.dtype)
    g = _dense_grad(xp, grad, base, "momentum")
    if a["rescale_grad"] != 1.0:
        g = g * a["rescale_grad"]
    if a["regularization_method"] == "l2_decay":
        g = g + a["regularization_coeff"] * base
    if "Velocity" in ctx.donated and g.dtype == v.dtype:
        v_out = v  # the same values as v * mu + g, in v's own array
        v_out *= mu
        v_out += g
    else:
        v_out = v * mu + g
    step = (g + v_out * mu) * rate if a["use_nesterov"] else rate * v_out
    if "Param" in ctx.donated and base is p and step.dtype == p.dtype:
        new = xp.subtract(p, step, out=p)
    else:
        new = base - step
    p_out, m_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return p_out, v_out.astype(v.dtype, copy=False), m_out


def_op("momentum", inputs=["Param", "Grad", "Velocity", "LearningRate", "MasterParam?"],
       outputs=["ParamOut", "VelocityOut", "MasterParamOut?"],
       attrs={"mu": ("float", None), "use_nesterov": ("bool", False),
              "regularization_method": ("string", ""), "regularization_coeff": ("float", 0.0),
              "multi_precision": ("bool", False), "rescale_grad": ("float", 1.0)},
       infer_shape=_update_infer(("Velocity", "MasterParam"), required=("mu",)),
       kernel=_momentum_kernel, lod_aware=True,
       in_place={"ParamOut": "Param", "VelocityOut": "Velocity"},
       doc="g = Grad * rescale_grad (+ regularization_coeff * Param when "
           "regularization_method is 'l2_decay'); VelocityOut = mu * Velocity + g; "
           "ParamOut = Param - lr * (g + mu * VelocityOut) with use_nesterov, else "
           "Param - lr * VelocityOut. A SelectedRows Grad updates every row (missing rows 0). "
           "Paddle's CPU dense kernel ignores rescale_grad; here (as its GPU and sparse "
           "kernels) it always applies.")


# --- adam -------------------------------------------------------------------------------------
#: the inputs adam updates in place when they are donated
_ADAM_STATE = frozenset({"Param", "Moment1", "Moment2"})
#: elements of scratch an in-place adam update works with at a time
_ADAM_SCRATCH = 1 << 16
#: the element types of the fused update (one pass instead of the formula's twelve)
_FUSED_TYPES = (np.dtype("float32"), np.dtype("float64"))
#: the runtime header whose adam_step a device's fused update compiles (the host's too)
#: (os.path: pathlib would bring urllib and ipaddress into every training process)
_RUNTIME_HEADERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "rewriters", "native", "runtime")


def _device_adam(xp):
    """adam_step over every element as one CUDA kernel (None off a GPU), rate and eps_hat
    worked out per thread in the formula's order from the one-element inputs: one launch
    per op where the formula launches about twenty. No FMA contraction, as on the host:
    the values are the formula's."""
    return compiled_elementwise(
        xp, "fluid_adam_step",
        "T param, T grad, T m1, T m2, T lr, T pow1, T pow2, T beta1, T beta2, T eps",
        "T param_out, T m1_out, T m2_out",
        """
        const T one = 1;
        const T rate = lr * sqrt(one - pow2) / (one - pow1);
        const T eps_hat = eps * sqrt(one - pow2);
        T p = param, first = m1, second = m2;
        fluid_native::adam_step(p, grad, first, second, beta1, beta2, rate, eps_hat);
        param_out = p;
        m1_out = first;
        m2_out = second;
        """, preamble='#include "fluid_native_maps.h"',
        options=(f"-I{_RUNTIME_HEADERS}", "--fmad=false"))


def _adam_rate(xp, lr, pow1, pow2, eps, one):
    """(lr_t, eps_hat) of Paddle's kernel, in the type of its scalars: lr * sqrt(1 -
    Beta2Pow) / (1 - Beta1Pow) and epsilon * sqrt(1 - Beta2Pow)."""
    return lr * xp.sqrt(one - pow2) / (one - pow1), eps * xp.sqrt(one - pow2)


def _held_output(ctx, out_slot, in_slot, like):
    """What a lazy sparse update starts ``out_slot`` from: Fluid writes only the gradient's
    rows into the output's own buffer, so an output bound to another variable than its
    input keeps the rest of what it held (when it holds an array shaped like ``like``);
    otherwise a copy of ``like``, the input."""
    names = ctx.output_names(out_slot) if hasattr(ctx, "output_names") else []
    scope = getattr(ctx, "scope", None)
    if names and scope is not None and names != ctx.input_names(in_slot):
        holder = scope.find_var(names[0])
        value = holder.value if holder is not None else None
        array = value.array if isinstance(value, LoDTensor) else None
        if array is not None and tuple(array.shape) == tuple(like.shape):
            return ctx.xp.asarray(array).astype(like.dtype, copy=True)
    return like.copy()


def _adam_kernel(ctx, param, grad, lr, m1, m2, b1p, b2p, beta1_t, beta2_t, eps_t, master,
                 skip):
    xp, a = ctx.xp, ctx.attrs
    p, m1, m2, master = _array(param), _array(m1), _array(m2), _array(master)
    b1p, b2p = _array(b1p), _array(b2p)
    skip_flag = _device_flag(ctx, skip)
    skipped = skip is not None and skip_flag is None and bool(_value(skip))
    if skipped or _is_empty_sparse(grad):
        out = _unchanged(p, m1, m2)
        # a skipped step copies the powers out; an empty sparse one leaves them alone
        pows = _unchanged(b1p, b2p) if skipped and not a["use_global_beta_pow"] else (None, None)
        return out + pows + (None,)
    base = _base(ctx, p, master)
    # Paddle's kernel does its scalar arithmetic in the parameter's type (float32: 1 - 0.999f
    # is 4.7e-5 away from 1 - 0.999), and over many steps that shows in the loss curve.
    real = base.dtype.type
    if xp is np:  # the host: NumPy scalars of the parameter's type
        def scalar(t, default=None):
            return real(default if t is None else _value(t))
    else:  # a device: 0-d arrays of that type, which stay there
        def scalar(t, default=None):
            return real(default) if t is None else \
                _array(t).reshape(()).astype(real, copy=False)
    one = real(1)
    beta1, beta2 = scalar(beta1_t, a["beta1"]), scalar(beta2_t, a["beta2"])
    eps, pow1, pow2 = scalar(eps_t, a["epsilon"]), scalar(b1p), scalar(b2p)
    lr = scalar(lr)
    lazy = isinstance(grad, SelectedRows) and a["lazy_mode"]
    dense = None if lazy else _dense_grad(xp, grad, base, "adam")
    same = dense is not None and dense.dtype == base.dtype == m1.dtype == m2.dtype
    # on a GPU the dense update is one kernel, which works out rate and eps_hat itself
    one_kernel = _device_adam(xp) if same and skip_flag is None and \
        base.dtype in _FUSED_TYPES and all(isinstance(v, xp.ndarray) and v.dtype == base.dtype
                                           for v in (lr, pow1, pow2)) else None
    if one_kernel is None:
        rate, eps_hat = _adam_rate(xp, lr, pow1, pow2, eps, one)

    def step(pv, gv, m1v, m2v, donated=frozenset()):
        # Paddle's formula term by term, worked in buffers this kernel owns (the outputs and
        # one scratch array), so a step allocates three arrays: the scratch array becomes
        # the new parameter. An input is written only when donated (then its array is the
        # output: one scratch array in all)
        scratch = xp.multiply(gv, one - beta1)
        if "Moment1" in donated:
            m1n = m1v
            m1n *= beta1
        else:
            m1n = m1v * beta1
        m1n += scratch
        xp.multiply(gv, gv, out=scratch)
        scratch *= one - beta2
        if "Moment2" in donated:
            m2n = m2v
            m2n *= beta2
        else:
            m2n = m2v * beta2
        m2n += scratch
        xp.sqrt(m2n, out=scratch)
        scratch += eps_hat
        xp.divide(m1n, scratch, out=scratch)
        scratch *= rate
        return xp.subtract(pv, scratch, out=pv if "Param" in donated else scratch), m1n, m2n

    if lazy:
        rows, values = merged_rows(xp, grad, "adam", base.shape[0])
        index = xp.asarray(rows)
        new = _held_output(ctx, "ParamOut", "Param", base) if base is p else base.copy()
        m1_out = _held_output(ctx, "Moment1Out", "Moment1", m1)
        m2_out = _held_output(ctx, "Moment2Out", "Moment2", m2)
        new[index], m1_out[index], m2_out[index] = step(
            base[index], values.reshape((rows.size,) + base.shape[1:]), m1[index], m2[index])
    else:
        # the master copy (not Param) is what the update writes under multi_precision
        donated = ctx.donated if same and base is p else ctx.donated - {"Param"} if same \
            else frozenset()
        if skip_flag is not None:  # the inputs may be kept, so they are not written
            donated = frozenset()
        if one_kernel is not None:
            # into the state when the op may write it, else into three new arrays
            outs = (base, m1, m2) if donated >= _ADAM_STATE and \
                len({id(base), id(dense), id(m1), id(m2)}) == 4 else ()
            new, m1_out, m2_out = one_kernel(base, dense, m1, m2, lr, pow1, pow2, beta1,
                                             beta2, eps, *outs)
        elif xp is np and same and base.dtype in _FUSED_TYPES and all(
                x.flags.c_contiguous for x in (base, dense, m1, m2)):
            # on the host, the element update in one pass: in place when all three are the
            # op's to write (and four arrays: a variable bound to two slots is updated into
            # new ones, as the formula reads every input before it writes); else the new
            # parameter over the gradient when that is the op's to write (a temporary that
            # dies here: Executor.run holds the old state, so this saves the one new array
            # it can), and new moments; else into three new arrays (the formula's three)
            distinct = len({id(base), id(dense), id(m1), id(m2)}) == 4
            if donated >= _ADAM_STATE and distinct:
                outs = (base, m1, m2)
            elif "Grad" in donated and distinct and dense is _array(grad) \
                    and dense.shape == base.shape and dense.flags.writeable:
                outs = (dense, xp.empty_like(m1), xp.empty_like(m2))
            else:
                outs = (xp.empty_like(base), xp.empty_like(m1), xp.empty_like(m2))
            _fused.adam(base, dense, m1, m2, *outs, beta1, beta2, rate, eps_hat)
            new, m1_out, m2_out = outs
        elif donated >= _ADAM_STATE and base.size > _ADAM_SCRATCH and all(
                x.flags.c_contiguous for x in (base, m1, m2)):
            # all three updated in place: a slice at a time, so the scratch array stays
            # small (the values are the same: the formula is elementwise)
            flat = [x.reshape(-1) for x in (base, dense, m1, m2)]
            for start in range(0, base.size, _ADAM_SCRATCH):
                part = slice(start, start + _ADAM_SCRATCH)
                step(*[x[part] for x in flat], donated)
            new, m1_out, m2_out = base, m1, m2
        else:
            new, m1_out, m2_out = step(base, dense, m1, m2, donated)
    if a["use_global_beta_pow"]:
        pows = (None, None)
    else:
        pows = ((b1p * beta1).astype(b1p.dtype, copy=False),
                (b2p * beta2).astype(b2p.dtype, copy=False))
    if skip_flag is not None:  # a true SkipUpdate on a device keeps every input
        new, m1_out, m2_out = (xp.where(skip_flag, old, x) for old, x in
                               ((base, new), (m1, m1_out), (m2, m2_out)))
        if not a["use_global_beta_pow"]:
            pows = tuple(xp.where(skip_flag, old, x).astype(old.dtype, copy=False)
                         for old, x in zip((b1p, b2p), pows))
    p_out, master_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return (p_out, m1_out.astype(m1.dtype, copy=False), m2_out.astype(m2.dtype, copy=False)) \
        + pows + (master_out,)


def_op("adam",
       inputs=["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow",
               "Beta1Tensor?", "Beta2Tensor?", "EpsilonTensor?", "MasterParam?", "SkipUpdate?"],
       outputs=["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut?", "Beta2PowOut?",
                "MasterParamOut?"],
       attrs={"beta1": ("float", 0.9), "beta2": ("float", 0.999), "epsilon": ("float", 1e-8),
              "lazy_mode": ("bool", False), "min_row_size_to_use_multithread": ("long", 1000),
              "multi_precision": ("bool", False), "use_global_beta_pow": ("bool", False)},
       infer_shape=_update_infer(("Moment1", "Moment2", "MasterParam"),
                                 ("LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                                  "Beta2Tensor", "EpsilonTensor", "SkipUpdate")),
       kernel=_adam_kernel, lod_aware=True,
       in_place={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
       reuses={"ParamOut": "Grad"},
       doc="Moment1Out = beta1 * Moment1 + (1 - beta1) * g; Moment2Out = beta2 * Moment2 + "
           "(1 - beta2) * g^2; lr_t = lr * sqrt(1 - Beta2Pow) / (1 - Beta1Pow); ParamOut = "
           "Param - lr_t * Moment1Out / (sqrt(Moment2Out) + epsilon * sqrt(1 - Beta2Pow)); "
           "Beta{1,2}PowOut = Beta{1,2}Pow * beta{1,2} unless use_global_beta_pow. "
           "Beta1Tensor/Beta2Tensor/EpsilonTensor override the attributes; a true SkipUpdate "
           "copies every input to its output. A SelectedRows Grad updates every row (missing "
           "rows 0), or only its rows with lazy_mode (outputs bound to other variables than "
           "their inputs keep their other rows). Beta1PowOut/Beta2PowOut may be left "
           "out (as programs from before Paddle 1.7 do).")


# --- a run's committed updates -------------------------------------------------------------
# An update op of a run's trailing updates (exec/update_commit.py) is written in place by one
# C call for all of them (``_fused.commit``), which checks every update before it writes any.
# ``commit(attrs, values, writes)`` gives the op's update as that call takes it, with the
# kernel's scalars, or None where the kernel must run the op (a sparse gradient, a master
# copy, SkipUpdate, arrays of other types or shapes): ``values`` are its inputs' values in
# slot order (None where absent), ``writes`` the input slots whose outputs name the same
# variable (the arrays the update may write).

def _dense_host(value, dtype, size):
    """The array of a LoDTensor ``value`` when it is a host array of ``dtype`` and ``size``
    elements, else None."""
    if value.__class__ is not LoDTensor:
        return None
    array = value.array
    return array if array.__class__ is np.ndarray and array.dtype == dtype and \
        array.size == size else None


def _host_arrays(param, writes, slots, values):
    """``(Param's array, the arrays of values)`` when the op writes each of ``slots``,
    Param is a host array of a fused type and each of ``values`` a LoDTensor of a host
    array of its type and size; else None."""
    if param.__class__ is not LoDTensor or not writes >= slots:
        return None
    p = param.array
    if p.__class__ is not np.ndarray or p.dtype not in _FUSED_TYPES:
        return None
    arrays = [_dense_host(v, p.dtype, p.size) for v in values]
    if any(a is None for a in arrays):  # (``is``: an array's == compares elements)
        return None
    return p, arrays


def _host_rate(lr):
    """The learning rate's host array, or None."""
    return lr.array if lr.__class__ is LoDTensor and lr.array.__class__ is np.ndarray else None


def _host_state(param, writes, slots, values, lr, master=None):
    """``(Param's array, the arrays of values, the learning rate's array)`` as
    :func:`_host_arrays` and :func:`_host_rate` find them, for an op without a master
    weight; else None."""
    found = _host_arrays(param, writes, slots, values) if master is None else None
    rate = _host_rate(lr)
    return None if found is None or rate is None else (*found, rate)


def _adam_commit(attrs, values, writes):
    param, grad, lr, m1, m2, b1p, b2p, beta1_t, beta2_t, eps_t, master, skip = values
    found = _host_arrays(param, writes, _ADAM_STATE, (grad, m1, m2)) \
        if master is None and skip is None else None
    if found is None:
        return None
    p, arrays = found
    pows = [None, None]
    if not attrs["use_global_beta_pow"]:  # written in place: the parameter's type
        if not writes >= {"Beta1Pow", "Beta2Pow"}:
            return None
        pows = [_dense_host(v, p.dtype, 1) for v in (b1p, b2p)]
        if pows[0] is None or pows[1] is None:
            return None
    real = p.dtype.type
    one = real(1)
    beta1 = real(attrs["beta1"] if beta1_t is None else _value(beta1_t))
    beta2 = real(attrs["beta2"] if beta2_t is None else _value(beta2_t))
    eps = real(attrs["epsilon"] if eps_t is None else _value(eps_t))
    rate, eps_hat = _adam_rate(np, real(_value(lr)), real(_value(b1p)), real(_value(b2p)),
                               eps, one)
    return _fused.commit, (0, p, *arrays, *pows, beta1, beta2, rate, eps_hat)


def _sgd_commit(attrs, values, writes):
    param, lr, grad, master = values
    state = _host_state(param, writes, {"Param"}, (grad,), lr, master)
    if state is None:
        return None
    p, arrays, rate = state
    return _fused.commit, (1, p, *arrays, rate)


def _momentum_commit(attrs, values, writes):
    param, grad, velocity, lr, master = values
    state = _host_state(param, writes, {"Param", "Velocity"}, (grad, velocity), lr, master)
    if state is None:
        return None
    p, arrays, rate = state
    l2 = attrs["regularization_coeff"] if attrs["regularization_method"] == "l2_decay" \
        else None
    return _fused.commit, (2, p, *arrays, rate, attrs["mu"], attrs["rescale_grad"], l2,
                           attrs["use_nesterov"])


def _adagrad_commit(attrs, values, writes):
    param, grad, moment, lr, master = values
    state = _host_state(param, writes, {"Param", "Moment"}, (grad, moment), lr, master)
    if state is None:
        return None
    p, arrays, rate = state
    return _fused.commit, (3, p, *arrays, rate, attrs["epsilon"])


def _rmsprop_commit(attrs, values, writes):
    param, mean_square, mean_grad, lr, grad, moment = values
    state = _host_state(param, writes, {"Param", "MeanSquare", "Moment"},
                        (grad, mean_square, moment), lr)
    if state is None:
        return None
    p, (g, ms, mom), rate = state
    mg = None
    if attrs["centered"]:  # (without MeanGrad the kernel's error is the op's)
        mg = _dense_host(mean_grad, p.dtype, p.size) if "MeanGrad" in writes else None
        if mg is None:
            return None
    decay = attrs["decay"]
    return _fused.commit, (4, p, g, ms, mg, mom, rate, decay, 1 - decay, attrs["epsilon"],
                           attrs["momentum"])


attach_commit("sgd", _sgd_commit)
attach_commit("momentum", _momentum_commit)
attach_commit("adam", _adam_commit)


# --- adamax -----------------------------------------------------------------------------------
def _adamax_kernel(ctx, param, grad, lr, moment, inf_norm, b1p, master):
    xp, a = ctx.xp, ctx.attrs
    p, m, u, master = _array(param), _array(moment), _array(inf_norm), _array(master)
    if _is_empty_sparse(grad):
        return _unchanged(p, m, u) + (None,)
    base = _base(ctx, p, master)
    beta1, beta2, eps = a["beta1"], a["beta2"], a["epsilon"]
    g = _dense_grad(xp, grad, base, "adamax")
    m_out = beta1 * m + (1 - beta1) * g
    u_out = xp.maximum(xp.abs(g), beta2 * u + eps)
    # the rate in float64 (NumPy's, not Python's: Beta1Pow = 1 gives IEEE inf, and nan where
    # the moment is 0, as Paddle's kernel does); the result is cast back below
    rate, pow1 = _scalar(ctx, lr), _scalar(ctx, b1p)
    if xp is np:
        rate, pow1 = np.float64(rate), np.float64(pow1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = rate / (1 - pow1)
        new = base - rate * (m_out / u_out)
    p_out, master_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return (p_out, m_out.astype(m.dtype, copy=False), u_out.astype(u.dtype, copy=False),
            master_out)


def_op("adamax",
       inputs=["Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow", "MasterParam?"],
       outputs=["ParamOut", "MomentOut", "InfNormOut", "MasterParamOut?"],
       attrs={"beta1": ("float", 0.9), "beta2": ("float", 0.999), "epsilon": ("float", 1e-8),
              "multi_precision": ("bool", False)},
       infer_shape=_update_infer(("Moment", "InfNorm", "MasterParam"),
                                 ("LearningRate", "Beta1Pow")),
       kernel=_adamax_kernel, lod_aware=True,
       doc="MomentOut = beta1 * Moment + (1 - beta1) * g; InfNormOut = max(|g|, beta2 * "
           "InfNorm + epsilon); ParamOut = Param - lr / (1 - Beta1Pow) * MomentOut / "
           "InfNormOut. Beta1Pow is not updated here (the optimizer appends a scale op).")


# --- adagrad / decayed_adagrad ------------------------------------------------------------------
def _adagrad_kernel(ctx, param, grad, moment, lr, master):
    xp = ctx.xp
    p, m, master = _array(param), _array(moment), _array(master)
    base, eps = _base(ctx, p, master), ctx.attrs["epsilon"]
    rate = _as(_scalar(ctx, lr), base.dtype)
    if isinstance(grad, SelectedRows):
        rows, values = merged_rows(xp, grad, "adagrad", base.shape[0])
        new, m_out = base.copy(), m.copy()
        if rows.size:
            index = xp.asarray(rows)
            g = values.reshape((rows.size,) + base.shape[1:])
            m_rows = m[index] + g * g
            m_out[index] = m_rows
            new[index] = base[index] - rate * g / (xp.sqrt(m_rows) + eps)
    else:
        g = _array(grad)
        m_out = m + g * g
        new = base - rate * g / (xp.sqrt(m_out) + eps)
    p_out, master_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return p_out, m_out.astype(m.dtype, copy=False), master_out


def_op("adagrad", inputs=["Param", "Grad", "Moment", "LearningRate", "MasterParam?"],
       outputs=["ParamOut", "MomentOut", "MasterParamOut?"],
       attrs={"epsilon": ("float", 1e-6), "multi_precision": ("bool", False)},
       infer_shape=_update_infer(("Moment", "MasterParam")),
       kernel=_adagrad_kernel, lod_aware=True,
       doc="MomentOut = Moment + g^2; ParamOut = Param - lr * g / (sqrt(MomentOut) + "
           "epsilon). A SelectedRows Grad updates only its rows.")
attach_commit("adagrad", _adagrad_commit)


def _decayed_adagrad_kernel(ctx, param, grad, moment, lr):
    xp, a = ctx.xp, ctx.attrs
    p, m = _array(param), _array(moment)
    if _is_empty_sparse(grad):
        return _unchanged(p, m)
    g = _dense_grad(xp, grad, p, "decayed_adagrad")
    m_out = a["decay"] * m + (1 - a["decay"]) * g * g
    new = p - _as(_scalar(ctx, lr), p.dtype) * g / (xp.sqrt(m_out) + a["epsilon"])
    return new.astype(p.dtype, copy=False), m_out.astype(m.dtype, copy=False)


def_op("decayed_adagrad", inputs=["Param", "Grad", "Moment", "LearningRate"],
       outputs=["ParamOut", "MomentOut"],
       attrs={"decay": ("float", 0.95), "epsilon": ("float", 1e-6)},
       infer_shape=_update_infer(("Moment",)), kernel=_decayed_adagrad_kernel, lod_aware=True,
       doc="MomentOut = decay * Moment + (1 - decay) * g^2; ParamOut = Param - lr * g / "
           "(sqrt(MomentOut) + epsilon).")


# --- rmsprop ----------------------------------------------------------------------------------
def _rmsprop_infer(ctx):
    if ctx.attr("centered"):
        ctx.check(ctx.has_input("MeanGrad"), "input 'MeanGrad'", "a variable when centered is "
                  "true", "none")
    _update_infer(("MeanSquare", "Moment", "MeanGrad"))(ctx)


def _rmsprop_kernel(ctx, param, mean_square, mean_grad, lr, grad, moment):
    xp, a = ctx.xp, ctx.attrs
    p, ms, mg, mom = _array(param), _array(mean_square), _array(mean_grad), _array(moment)
    if _is_empty_sparse(grad):
        return _unchanged(p, mom, ms, mg)
    rho, eps, rate = a["decay"], a["epsilon"], _as(_scalar(ctx, lr), p.dtype)
    g = _dense_grad(xp, grad, p, "rmsprop")
    ms_out = rho * ms + (1 - rho) * g * g
    mg_out = None
    if a["centered"]:
        if mg is None:
            raise InvalidArgument(expected("rmsprop", "input MeanGrad", "a tensor when centered "
                                           "is true", "none"))
        mg_out = rho * mg + (1 - rho) * g
        mom_out = a["momentum"] * mom + rate * g / xp.sqrt(ms_out - mg_out * mg_out + eps)
        mg_out = mg_out.astype(mg.dtype, copy=False)
    else:
        mom_out = a["momentum"] * mom + rate * g / xp.sqrt(ms_out + eps)
        if mg is not None and ctx.wants("MeanGradOut"):
            mg_out = mg.copy()
    new = p - mom_out
    return (new.astype(p.dtype, copy=False), mom_out.astype(mom.dtype, copy=False),
            ms_out.astype(ms.dtype, copy=False), mg_out)


def_op("rmsprop",
       inputs=["Param", "MeanSquare", "MeanGrad?", "LearningRate", "Grad", "Moment"],
       outputs=["ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut?"],
       attrs={"epsilon": ("float", 1e-10), "decay": ("float", 0.9), "momentum": ("float", 0.0),
              "centered": ("bool", False)},
       infer_shape=_rmsprop_infer, kernel=_rmsprop_kernel, lod_aware=True,
       doc="MeanSquareOut = decay * MeanSquare + (1 - decay) * g^2; centered: MeanGradOut = "
           "decay * MeanGrad + (1 - decay) * g and MomentOut = momentum * Moment + lr * g / "
           "sqrt(MeanSquareOut - MeanGradOut^2 + epsilon); else MomentOut = momentum * Moment "
           "+ lr * g / sqrt(MeanSquareOut + epsilon); ParamOut = Param - MomentOut. A "
           "SelectedRows Grad updates every row (missing rows 0).")
attach_commit("rmsprop", _rmsprop_commit)


# --- adadelta ---------------------------------------------------------------------------------
def _adadelta_kernel(ctx, param, grad, avg_sq_grad, avg_sq_update, lr, master):
    xp, a = ctx.xp, ctx.attrs
    p, asg, asu, master = _array(param), _array(avg_sq_grad), _array(avg_sq_update), \
        _array(master)
    if _is_empty_sparse(grad):
        return _unchanged(p, asg, asu) + (None,)
    base = _base(ctx, p, master)
    rho, eps = a["rho"], a["epsilon"]
    g = _dense_grad(xp, grad, base, "adadelta")
    asg_out = rho * asg + (1 - rho) * g * g
    update = -(xp.sqrt(asu + eps) / xp.sqrt(asg_out + eps)) * g
    asu_out = rho * asu + (1 - rho) * update * update
    rate = 1.0 if lr is None else _as(_scalar(ctx, lr), base.dtype)
    new = base + rate * update
    p_out, master_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return (p_out, asg_out.astype(asg.dtype, copy=False), asu_out.astype(asu.dtype, copy=False),
            master_out)


def_op("adadelta",
       inputs=["Param", "Grad", "AvgSquaredGrad", "AvgSquaredUpdate", "LearningRate?",
               "MasterParam?"],
       outputs=["ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut", "MasterParamOut?"],
       attrs={"rho": ("float", 0.95), "epsilon": ("float", 1e-6),
              "multi_precision": ("bool", False)},
       infer_shape=_update_infer(("AvgSquaredGrad", "AvgSquaredUpdate", "MasterParam")),
       kernel=_adadelta_kernel, lod_aware=True,
       doc="AvgSquaredGradOut = rho * AvgSquaredGrad + (1 - rho) * g^2; update = "
           "-sqrt(AvgSquaredUpdate + epsilon) / sqrt(AvgSquaredGradOut + epsilon) * g; "
           "AvgSquaredUpdateOut = rho * AvgSquaredUpdate + (1 - rho) * update^2; ParamOut = "
           "Param + lr * update (lr = 1 without LearningRate, as before Paddle 2.5).")


# --- lamb -------------------------------------------------------------------------------------
def _lamb_kernel(ctx, param, grad, lr, m1, m2, b1p, b2p, master, skip):
    xp, a = ctx.xp, ctx.attrs
    p, m1, m2, master = _array(param), _array(m1), _array(m2), _array(master)
    b1p, b2p = _array(b1p), _array(b2p)
    skip_flag = _device_flag(ctx, skip)
    if (skip is not None and skip_flag is None and bool(_value(skip))) \
            or _is_empty_sparse(grad):
        return _unchanged(p, m1, m2, b1p, b2p) + (None,)
    beta1, beta2, eps, decay = a["beta1"], a["beta2"], a["epsilon"], a["weight_decay"]
    base = _base(ctx, p, master)
    g = _dense_grad(xp, grad, base, "lamb")
    m1_out = beta1 * m1 + (1 - beta1) * g
    m2_out = beta2 * m2 + (1 - beta2) * g * g
    m1_hat = m1_out / _as(1 - _scalar(ctx, b1p), base.dtype)
    m2_hat = m2_out / _as(1 - _scalar(ctx, b2p), base.dtype)
    ratio_div = m1_hat / (xp.sqrt(m2_hat) + eps) + decay * base
    rate = _scalar(ctx, lr)
    if decay > 0 or a["always_adapt"]:
        # the trust ratio ||Param|| / ||r|| (1 when either is 0), on the array module so a
        # device keeps the norms
        p_norm, r_norm = _norm(xp, base), _norm(xp, ratio_div)
        ok = (p_norm > 0) & (r_norm > 0)
        rate = rate * xp.where(ok, p_norm / xp.where(ok, r_norm, 1.0), 1.0)
    new = base - _as(rate, base.dtype) * ratio_div
    outs = [new, m1_out, m2_out, b1p * beta1, b2p * beta2]
    if skip_flag is not None:  # a true SkipUpdate on a device keeps every input
        outs = [xp.where(skip_flag, old, x) for old, x in zip((base, m1, m2, b1p, b2p), outs)]
    new, m1_out, m2_out, b1p_out, b2p_out = outs
    p_out, master_out = _param_outs(ctx, new.astype(base.dtype, copy=False), p, master)
    return (p_out, m1_out.astype(m1.dtype, copy=False), m2_out.astype(m2.dtype, copy=False),
            b1p_out.astype(b1p.dtype, copy=False), b2p_out.astype(b2p.dtype, copy=False),
            master_out)


def_op("lamb",
       inputs=["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow",
               "MasterParam?", "SkipUpdate?"],
       outputs=["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut?", "Beta2PowOut?",
                "MasterParamOut?"],
       attrs={"weight_decay": ("float", None), "beta1": ("float", 0.9),
              "beta2": ("float", 0.999), "epsilon": ("float", 1e-6),
              "always_adapt": ("bool", False), "multi_precision": ("bool", False)},
       infer_shape=_update_infer(("Moment1", "Moment2", "MasterParam"),
                                 ("LearningRate", "Beta1Pow", "Beta2Pow", "SkipUpdate"),
                                 required=("weight_decay",), scalar_at_least=True),
       kernel=_lamb_kernel, lod_aware=True,
       doc="Moment1Out = beta1 * Moment1 + (1 - beta1) * g; Moment2Out = beta2 * Moment2 + "
           "(1 - beta2) * g^2; r = (Moment1Out / (1 - Beta1Pow)) / (sqrt(Moment2Out / (1 - "
           "Beta2Pow)) + epsilon) + weight_decay * Param; ParamOut = Param - lr * t * r with "
           "t = ||Param|| / ||r|| when weight_decay > 0 or always_adapt and both norms are "
           "positive, else t = 1; Beta{1,2}PowOut = Beta{1,2}Pow * beta{1,2}. A true "
           "SkipUpdate copies the inputs out; a SelectedRows Grad updates every row (missing "
           "rows 0).")


# --- learning-rate schedule helpers -----------------------------------------------------------
def _pow_factor(ctx, factor_t):
    return ctx.attrs["factor"] if factor_t is None else _scalar(ctx, factor_t)


def _pow_kernel(ctx, x, factor_t=None):
    return ctx.xp.power(x, _as(_pow_factor(ctx, factor_t), x.dtype)).astype(x.dtype, copy=False)


def _pow_grad_kernel(ctx, x, factor_t, dout):
    factor = _pow_factor(ctx, factor_t)
    return (dout * _as(factor, dout.dtype) * ctx.xp.power(x, _as(factor - 1, x.dtype))).astype(
        dout.dtype, copy=False)


_POW_ATTRS = {"factor": ("float", 1.0)}
def_op("pow", inputs=["X", "FactorTensor?"], outputs=["Out"], attrs=_POW_ATTRS,
       infer_shape=same_shape("X", "Out"), share_lod=("X", ["Out"]),
       grad=grad_maker("pow_grad", inputs=["X", "FactorTensor"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_pow_kernel, plain_kernel=_pow_kernel,
       doc="Out = X ^ factor (FactorTensor, when given, replaces the attribute); "
           "dX = dOut * factor * X^(factor - 1).")
def_op("pow_grad", inputs=["X", "FactorTensor?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_POW_ATTRS, infer_shape=same_shape("X", "X@GRAD"), kernel=_pow_grad_kernel,
       doc="Gradient of pow.")


# --- ftrl, lars_momentum, dpsgd -----------------------------------------------------------------
def _ftrl_kernel(ctx, param, squared, linear, grad, lr):
    xp, a = ctx.xp, ctx.attrs
    p, n, z = _array(param), _array(squared), _array(linear)
    g = _dense_grad(xp, grad, p, "ftrl")
    # Fluid's kernel adds 1e-10 to both strengths (so l1 = 0 still zeroes an exact 0 z')
    rate, l1, l2, power = _as(_scalar(ctx, lr), p.dtype), a["l1"] + 1e-10, a["l2"] + 1e-10, \
        a["lr_power"]
    new_n = n + g * g
    if power == -0.5:
        sigma = (xp.sqrt(new_n) - xp.sqrt(n)) / rate
        y = xp.sqrt(new_n) / rate + 2 * l2
    else:
        sigma = (new_n ** -power - n ** -power) / rate
        y = new_n ** -power / rate + 2 * l2
    new_z = z + g - sigma * p
    new_p = xp.where(xp.abs(new_z) > l1, (l1 * xp.sign(new_z) - new_z) / y, 0)
    return (new_p.astype(p.dtype, copy=False), new_n.astype(n.dtype, copy=False),
            new_z.astype(z.dtype, copy=False))


def_op("ftrl", inputs=["Param", "SquaredAccumulator", "LinearAccumulator", "Grad",
                       "LearningRate"],
       outputs=["ParamOut", "SquaredAccumOut", "LinearAccumOut"],
       attrs={"l1": ("float", 0.0), "l2": ("float", 0.0), "lr_power": ("float", -0.5)},
       infer_shape=lambda ctx: [ctx.set_output(out, ctx.input_shape(src), ctx.input_dtype(src))
                                for out, src in (("ParamOut", "Param"),
                                                 ("SquaredAccumOut", "SquaredAccumulator"),
                                                 ("LinearAccumOut", "LinearAccumulator"))],
       kernel=_ftrl_kernel, lod_aware=True,
       doc="FTRL-proximal: n' = n + g^2; z' = z + g - (n'^-p - n^-p) / lr * Param (p = "
           "lr_power; -0.5 gives square roots); ParamOut = (l1 sign(z') - z') / (n'^-p / lr "
           "+ 2 l2) where |z'| > l1, else 0 (l1, l2 each plus 1e-10); SquaredAccumOut = n', "
           "LinearAccumOut = z'.")


def _lars_momentum_kernel(ctx, param, grad, velocity, lr):
    xp, a = ctx.xp, ctx.attrs
    p, v = _array(param), _array(velocity)
    g = _dense_grad(xp, grad, p, "lars_momentum")
    decay, rate = a["lars_weight_decay"], _scalar(ctx, lr)
    # the local rate on the array module (a device keeps the norms); lr when a norm is 0
    p_norm, g_norm = _norm(xp, p), _norm(xp, g)
    ok = (p_norm > 0) & (g_norm > 0)
    local = rate * a["lars_coeff"] * p_norm / xp.where(ok, g_norm + decay * p_norm, 1.0)
    rate = xp.where(ok, local, rate)
    new_v = a["mu"] * v + _as(rate, v.dtype) * (g + decay * p)
    return (p - new_v).astype(p.dtype, copy=False), new_v.astype(v.dtype, copy=False)


def_op("lars_momentum", inputs=["Param", "Grad", "Velocity", "LearningRate"],
       outputs=["ParamOut", "VelocityOut"],
       attrs={"mu": ("float", None), "lars_coeff": ("float", 0.001),
              "lars_weight_decay": ("float", 0.0005)},
       infer_shape=_update_infer(("Velocity",), required=("mu",)),
       kernel=_lars_momentum_kernel, lod_aware=True,
       doc="Layer-wise adaptive rate: local_lr = lr * lars_coeff * |P| / (|G| + "
           "lars_weight_decay * |P|) (lr when either norm is 0); VelocityOut = mu * Velocity "
           "+ local_lr * (G + lars_weight_decay * P); ParamOut = P - VelocityOut.")


def _dpsgd_kernel(ctx, param, grad, lr):
    xp, a = ctx.xp, ctx.attrs
    p = _array(param)
    g = _dense_grad(xp, grad, p, "dpsgd")
    norm = _norm(xp, g)  # stays on a device: the scale is a 0-d array there
    scale = xp.where(norm > a["clip"], norm / a["clip"], 1.0)
    noise = ctx.random_state().normal(0.0, a["sigma"]) if a["sigma"] > 0 else 0.0
    new = p - _as(_scalar(ctx, lr), p.dtype) * (g / _as(scale, g.dtype)
                                                + noise / a["batch_size"])
    return new.astype(p.dtype, copy=False)


def_op("dpsgd", inputs=["Param", "Grad", "LearningRate"], outputs=["ParamOut"],
       attrs={"clip": ("float", 10.0), "batch_size": ("float", 16.0), "sigma": ("float", 1.0),
              "seed": ("int", 0)},
       infer_shape=_update_infer(()),
       kernel=_dpsgd_kernel, lod_aware=True, traits=("stateful",),  # (its noise is drawn)
       doc="Differentially private SGD: G is scaled down to norm clip when longer; one "
           "Gaussian draw n ~ N(0, sigma^2) per step; ParamOut = P - lr * (G / scale + "
           "n / batch_size).")


# --- average_accumulates: ModelAverage's window sums ----------------------------------------------
#: after this many steps the running sum moves into the second one (float precision)
MAX_NUM_ACCUMULATES = 16384


def _average_accumulates_kernel(ctx, param, sum_1, sum_2, sum_3, num_acc, old_num_acc,
                                num_updates):
    xp, a = ctx.xp, ctx.attrs
    p = _array(param)
    s1, s2, s3 = _array(sum_1) + p, _array(sum_2), _array(sum_3)
    # the counters stay arrays and the branches are selections, so a device keeps them
    n_acc, n_old, n_upd = (_array(t).reshape(()).astype(np.int64)
                           for t in (num_acc, old_num_acc, num_updates))
    n_upd = n_upd + 1
    n_acc = n_acc + 1
    roll = n_upd % MAX_NUM_ACCUMULATES == 0
    s2, s1 = xp.where(roll, s2 + s1, s2), xp.where(roll, 0, s1)
    close = (n_acc >= a["min_average_window"]) & (
        n_acc >= xp.minimum(float(a["max_average_window"]), n_upd * a["average_window"]))
    s3, s1, s2 = xp.where(close, s1 + s2, s3), xp.where(close, 0, s1), xp.where(close, 0, s2)
    n_old, n_acc = xp.where(close, n_acc, n_old), xp.where(close, 0, n_acc)
    return (s1, s2, s3) + tuple(n.reshape(1).astype(np.int64) for n in (n_acc, n_old, n_upd))


def_op("average_accumulates",
       inputs=["param", "in_sum_1", "in_sum_2", "in_sum_3", "in_num_accumulates",
               "in_old_num_accumulates", "in_num_updates"],
       outputs=["out_sum_1", "out_sum_2", "out_sum_3", "out_num_accumulates",
                "out_old_num_accumulates", "out_num_updates"],
       attrs={"average_window": ("float", 0.0), "max_average_window": ("long", 2 ** 63 - 1),
              "min_average_window": ("long", 10000)},
       infer_shape=lambda ctx: [ctx.set_output(out, ctx.input_shape(src), ctx.input_dtype(src))
                                for out, src in (
                                    ("out_sum_1", "in_sum_1"), ("out_sum_2", "in_sum_2"),
                                    ("out_sum_3", "in_sum_3"),
                                    ("out_num_accumulates", "in_num_accumulates"),
                                    ("out_old_num_accumulates", "in_old_num_accumulates"),
                                    ("out_num_updates", "in_num_updates"))],
       kernel=_average_accumulates_kernel, lod_aware=True,
       doc="ModelAverage's window: num_updates and num_accumulates count up; sum_1 += "
           "param; every 16384 updates sum_2 += sum_1, sum_1 = 0; when num_accumulates >= "
           "min_average_window and >= min(max_average_window, num_updates * "
           "average_window): sum_3 = sum_1 + sum_2, sum_1 = sum_2 = 0, "
           "old_num_accumulates = num_accumulates, num_accumulates = 0.")
