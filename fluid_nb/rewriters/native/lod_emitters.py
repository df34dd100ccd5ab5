"""Emitters of the LoD, tensor-array and small loop ops (the machinery of DynamicRNN), and of
the ops a loop's step and its gradient use: sum, increment, the comparisons,
fill_zeros_like, fill_constant_batch_size_like.

The LoD and array ops read and write run-time objects (``env.tensor``: a ``Tensor<T>``
with dims and LoD, a ``TensorArray<T>``, a ``RankTable``), so they compile in programs
whose sizes are read at run time (a LoD feed, sub-blocks); their kernels
(``runtime/fluid_native_dynamic.h``) set the dims and LoD of what they write. The others
also compile in a program specialised on its feed shapes, on plain pointers.
"""
from ...ops.creation import fill_value
from .emitter_table import NoEmitter, emitter
from .emitters import _broadcast, _fill_literal, _float, _one, _require_float
from .env import count


def _out(op, slot="Out"):
    return _one(op, slot, "outputs")


def _index(env, op):
    return f"index_of({env.tensor(_one(op, 'I'))})"


def _kind(env, name, want):
    if env.kind(name) != want:
        raise NoEmitter(f"{name} is a {env.kind(name)}, a {want} expected")


# --- rank tables ---------------------------------------------------------------------------------
@emitter("lod_rank_table")
def _lod_rank_table(op, env):
    x, out = _one(op, "X"), _out(op)
    _kind(env, out, "rank_table")
    return [f"lod_rank_table({env.tensor(x)}, {int(op.attrs.get('level', 0))}, "
            f"{env.tensor(out)});"]


@emitter("max_sequence_len")
def _max_sequence_len(op, env):
    table, out = _one(op, "RankTable"), _out(op)
    _kind(env, table, "rank_table")
    if env.ctype(out) != "int64_t":
        raise NoEmitter(f"{out} is {env.ctype(out)}, int64 expected")
    env.kernel_sets(out)
    return [f"max_sequence_len({env.tensor(table)}, {env.tensor(out)});"]


# --- lod_tensor_to_array / array_to_lod_tensor ---------------------------------------------------
@emitter("lod_tensor_to_array")
def _lod_tensor_to_array(op, env):
    x, table, out = _one(op, "X"), _one(op, "RankTable"), _out(op)
    _kind(env, out, "array")
    _kind(env, table, "rank_table")
    return [f"lod_tensor_to_array({env.tensor(x)}, {env.tensor(table)}, {env.tensor(out)});"]


@emitter("array_to_lod_tensor")
def _array_to_lod_tensor(op, env):
    x, table, out = _one(op, "X"), _one(op, "RankTable"), _out(op)
    _kind(env, x, "array")
    _kind(env, table, "rank_table")
    env.kernel_sets(out)
    return [f"array_to_lod_tensor({env.tensor(x)}, {env.tensor(table)}, {env.tensor(out)});"]


# --- tensor arrays -------------------------------------------------------------------------------
@emitter("read_from_array")
def _read_from_array(op, env):
    x, out = _one(op, "X"), _out(op)
    _kind(env, x, "array")
    env.kernel_sets(out)
    return [f"read_from_array({env.tensor(x)}, {_index(env, op)}, {env.tensor(out)});"]


@emitter("write_to_array")
def _write_to_array(op, env):
    x, out = _one(op, "X"), _out(op)
    _kind(env, out, "array")
    return [f"write_to_array({env.tensor(x)}, {_index(env, op)}, {env.tensor(out)});"]


@emitter("shrink_rnn_memory")
def _shrink_rnn_memory(op, env):
    x, table, out = _one(op, "X"), _one(op, "RankTable"), _out(op)
    _kind(env, table, "rank_table")
    env.kernel_sets(out)
    return [f"shrink_rnn_memory({env.tensor(x)}, {env.tensor(table)}, {_index(env, op)}, "
            f"{env.tensor(out)});"]


@emitter("shrink_rnn_memory_grad")
def _shrink_rnn_memory_grad(op, env):
    x, dout, dx = _one(op, "X"), _one(op, "Out@GRAD"), _out(op, "X@GRAD")
    env.kernel_sets(dx)
    given = f"&{env.tensor(dout)}" if dout else \
        f"static_cast<const Tensor<{env.ctype(x)}>*>(nullptr)"
    return [f"shrink_rnn_memory_grad({env.tensor(x)}, {given}, {env.tensor(dx)});"]


# --- sequence_pool and its gradient --------------------------------------------------------------
_POOL_TYPES = {"AVERAGE": "kPoolAverage", "SUM": "kPoolSum", "SQRT": "kPoolSqrt",
               "LAST": "kPoolLast", "FIRST": "kPoolFirst", "MAX": "kPoolMax"}


def _max_index(op, env, name, const=""):
    """MaxIndex's pointer (a null one when the op has none)."""
    if not name:
        return f"static_cast<{const}Tensor<int32_t>*>(nullptr)"
    if env.ctype(name) != "int32_t":
        raise NoEmitter(f"MaxIndex {name} is {env.ctype(name)}, int32 expected")
    return f"&{env.tensor(name)}"


@emitter("sequence_pool")
def _sequence_pool(op, env):
    x, out, index = _one(op, "X"), _out(op), _out(op, "MaxIndex")
    if index and env.dead(index):  # nobody reads it: left unwritten
        index = None
    _require_float(op, env, x)
    ctype = env.ctype(x)
    env.kernel_sets(out, index)
    return [f"sequence_pool({env.tensor(x)}, {_POOL_TYPES[op.attrs.get('pooltype', 'AVERAGE')]}, "
            f"{_float(op.attrs.get('pad_value', 0.0), ctype)}, {env.tensor(out)}, "
            f"{_max_index(op, env, index)});"]


@emitter("sequence_pool_grad")
def _sequence_pool_grad(op, env):
    x, index, dout, dx = (_one(op, "X"), _one(op, "MaxIndex"), _one(op, "Out@GRAD"),
                          _out(op, "X@GRAD"))
    env.kernel_sets(dx)
    return [f"sequence_pool_grad({env.tensor(x)}, {_max_index(op, env, index, 'const ')}, "
            f"{env.tensor(dout)}, "
            f"{_POOL_TYPES[op.attrs.get('pooltype', 'AVERAGE')]}, {env.tensor(dx)});"]


# --- sum, increment, comparisons, fills ----------------------------------------------------------
@emitter("sum")
def _sum(op, env):
    xs, out = op.inputs.get("X") or [], _out(op)
    if env.dynamic:
        kinds = {env.kind(x) for x in xs} | {env.kind(out)}
        if kinds - {"dense", "array"} or len(kinds) != 1:
            raise NoEmitter(f"inputs of kinds {sorted(kinds)}: tensors or tensor arrays "
                            f"expected")
        ctype = env.ctype(out)
        if any(env.ctype(x) != ctype for x in xs):
            raise NoEmitter("inputs of several types")
        env.kernel_sets(out)
        return [f"sum<{ctype}>({{{', '.join('&' + env.tensor(x) for x in xs)}}}, "
                f"{env.tensor(out)});"]
    present = [x for x in xs if env.has(x) and count(env.shape(x))]
    if not present or any(env.kind(x) != "dense" for x in xs):
        raise NoEmitter("an input without a dense value in the trace run")
    n = count(env.shape(present[0]))
    if any(count(env.shape(x)) != n for x in present):
        raise NoEmitter("inputs of different sizes")
    if out in present[2:]:
        raise NoEmitter("Out is one of the inputs after the first two")
    if len(present) == 1:
        return [f"copy({env.ptr(present[0])}, {env.ptr(out)}, {n});"]
    ctype = env.ctype(out)
    plus = f"FLUID_LAMBDA({ctype} a, {ctype} b) -> {ctype} {{ return a + b; }}"
    lines = [f"map2({env.ptr(present[0])}, {env.ptr(present[1])}, {env.ptr(out)}, {n}, {plus});"]
    lines += [f"map2({env.ptr(out)}, {env.ptr(x)}, {env.ptr(out)}, {n}, {plus});"
              for x in present[2:]]
    return lines


@emitter("increment")
def _increment(op, env):
    x, out = _one(op, "X"), _out(op)
    ctype = env.ctype(x)
    step = float(op.attrs.get("step", 1.0))
    literal = _float(step, ctype) if ctype in ("float", "double") else str(int(step))
    # Out = X + step in X's type (scale's kernel with scale 1), in place when Out is X
    return env.resize_like(out, x) + [
        f"scale({env.ptr(x)}, {env.ptr(out)}, {count(env.shape(x))}, {ctype}(1), "
        f"{ctype}({literal}), true);"]


_COMPARISONS = {"less_than": "Less", "less_equal": "LessEqual", "greater_than": "Greater",
                "greater_equal": "GreaterEqual", "equal": "Equal", "not_equal": "NotEqual"}


@emitter(*_COMPARISONS)
def _compare(op, env):
    x, y, out = _one(op, "X"), _one(op, "Y"), _out(op)
    if env.ctype(x) != env.ctype(y):
        raise NoEmitter(f"X is {env.ctype(x)} and Y {env.ctype(y)}: one type expected")
    if env.ctype(out) != "bool":
        raise NoEmitter(f"{out} is {env.ctype(out)}, bool expected")
    pre, n, post = _broadcast(op, env, x, y)
    return env.resize_like(out, x) + [
        f"compare({env.ptr(x)}, {env.ptr(y)}, {env.ptr(out)}, {pre}, {n}, {post}, "
        f"{_COMPARISONS[op.type]}());"]


@emitter("fill_zeros_like")
def _fill_zeros_like(op, env):
    x, out = _one(op, "X"), _out(op)
    if env.dynamic:
        env.kernel_sets(out)
        if env.kind(x) != env.kind(out) or env.kind(x) not in ("dense", "array"):
            raise NoEmitter(f"X a {env.kind(x)} and Out a {env.kind(out)}")
        return [f"zeros_like({env.tensor(x)}, {env.tensor(out)});"]
    ctype = env.ctype(out)
    return [f"fill({env.ptr(out)}, {count(env.shape(x))}, {ctype}(0));"]


@emitter("fill_constant_batch_size_like")
def _fill_constant_batch_size_like(op, env):
    source, out = _one(op, "Input"), _out(op)
    a = op.attrs
    ctype = env.ctype(out)
    literal = _fill_literal(fill_value(op.type, a), ctype)
    if not env.dynamic:
        return [f"fill({env.ptr(out)}, {count(env.shape(out))}, {ctype}({literal}));"]
    dims = [int(d) for d in a["shape"]]
    dims[a.get("output_dim_idx", 0)] = (f"batch_size_of({env.tensor(source)}, "
                                        f"{int(a.get('input_dim_idx', 0))})")
    return env.resize(out, dims) + [
        f"fill({env.ptr(out)}, {env.tensor(out)}.numel(), {ctype}({literal}));"]
