"""What goes into a run and what comes out of it: fed values checked and converted to the
variables' dtypes, the fetch list's names, the program copy with ``feed``/``fetch`` ops, and
fetched tensors as NumPy arrays (``FetchedArray``) with Fluid 1.x's [1]-shaped scalars."""
import numpy as np

from ..errors import InvalidArgument, InvalidType, NotFound, Unimplemented, expected
from ..framework.program import Variable
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..tensor.tensor import LoDTensor, LoDTensorArray, as_tensor, lossless_cast


def plain_fetch_names(fetch_list):
    """The names of a fetch list that is None or a list (tuple) of Variables and names
    only, as ``fetch_names`` gives them; None for any other fetch list (one that may hold
    optimizer ops to prune for, or wrong items: the executor checks it in full)."""
    if fetch_list is None:
        return ()
    if fetch_list.__class__ is not list and fetch_list.__class__ is not tuple:
        return None
    names = []
    for item in fetch_list:
        if item.__class__ is str:
            names.append(item)
        elif isinstance(item, Variable):
            names.append(item.name)
        else:
            return None
    return tuple(names)


def fetch_names(fetch_list):
    if fetch_list is None:
        return ()
    if not isinstance(fetch_list, (list, tuple)):
        fetch_list = [fetch_list]
    names = []
    for item in fetch_list:
        # a list of variables among the items (what fluid.gradients returns) is fetched as
        # its members, one level deep, as Fluid 1.8 does
        for member in item if isinstance(item, (list, tuple)) else (item,):
            if isinstance(member, str):
                names.append(member)
            elif isinstance(member, Variable):
                names.append(member.name)
            else:
                raise InvalidType(f"Executor.run: fetch_list items expected Variable, name or "
                                  f"a list of them, but received {type(member).__name__}")
    return tuple(names)


def with_feed_fetch(program, feed_names, fetch_names, feed_var_name, fetch_var_name):
    """The program to run: the original when it already has matching feed/fetch ops (saved
    inference models), else a copy with ``feed`` ops first and ``fetch`` ops last."""
    block = program.global_block()
    existing_feeds = {op.output("Out")[0]: op.attrs.get("col") for op in block.ops
                      if op.type == "feed"}
    existing_fetches = {op.input("X")[0]: op.attrs.get("col") for op in block.ops
                        if op.type == "fetch"}
    if existing_feeds or existing_fetches:
        ok_feed = not existing_feeds or set(feed_names) <= set(existing_feeds)
        ok_fetch = not existing_fetches or set(fetch_names) <= set(existing_fetches)
        if ok_feed and ok_fetch and (existing_feeds or not feed_names) \
                and (existing_fetches or not fetch_names):
            run = program.clone()
            _renumber(run.global_block(), "feed", "Out", feed_names)
            _renumber(run.global_block(), "fetch", "X", fetch_names)
            return run
        raise InvalidArgument(f"Executor.run: feed/fetch expected to match the program's own "
                              f"feed ops {sorted(existing_feeds)} and fetch ops "
                              f"{sorted(existing_fetches)}, but received feed {list(feed_names)} "
                              f"and fetch {list(fetch_names)}")
    run = program.clone()
    glob = run.global_block()
    for name in feed_names:
        if glob._find_var_recursive(name) is None:
            raise NotFound(f"Executor.run: feed '{name}' expected to name a variable of the "
                           f"program, but there is none")
    for name in fetch_names:
        if glob._find_var_recursive(name) is None:
            raise NotFound(f"Executor.run: fetch '{name}' expected to name a variable of the "
                           f"program, but there is none")
    glob.create_var(name=feed_var_name, type=VarType.FEED_MINIBATCH, persistable=True)
    glob.create_var(name=fetch_var_name, type=VarType.FETCH_LIST, persistable=True)
    for col, name in enumerate(feed_names):
        glob._prepend_op("feed", {"X": [feed_var_name]}, {"Out": [name]}, {"col": col})
    # ops before these in the copy: views and the event log number ops as in the program
    # the user built (the added feed ops count negative)
    glob.ops_prepended = len(feed_names)
    for col, name in enumerate(fetch_names):
        glob.append_op("fetch", {"X": [name]}, {"Out": [fetch_var_name]}, {"col": col})
    return run


def _renumber(block, op_type, slot, names):
    """Saved programs number their feed/fetch columns; align them with this call's order."""
    order = {name: i for i, name in enumerate(names)}
    keep = []
    for op in block.ops:
        if op.type == op_type:
            arg = op.inputs[slot][0] if slot == "X" else op.outputs[slot][0]
            if arg not in order:
                continue
            op.attrs["col"] = order[arg]
        keep.append(op)
    block.ops[:] = keep


def shape_fits(declared, shape):
    return len(declared) == len(shape) and all(d < 0 or d == g for d, g in zip(declared, shape))


def _to_rank(got, declared):
    """``got`` with trailing dims of size 1 dropped or added to reach ``declared``'s rank
    (where ``declared`` has 1 or -1 there), or None. Fluid 1.x scripts feed sequences of ids
    as [N, 1] (``create_lod_tensor`` of lists makes them so) into variables declared [-1],
    which Paddle lets through without comparing ranks."""
    rank = len(declared)
    if len(got) > rank and all(d == 1 for d in got[rank:]):
        return tuple(got[:rank])
    if 0 < len(got) < rank and all(d in (1, -1) for d in declared[len(got):]):
        return tuple(got) + (1,) * (rank - len(got))
    return None


def feed_tensor(name, var, value, place):
    """Convert a fed value to a LoDTensor of the variable's dtype, checking what Fluid
    checks: rank (up to trailing dims of size 1, see ``_to_rank``) and known dims must
    match; a lossless-kind cast (float64 -> float32,
    int32 -> int64, int -> float) is done, a lossy one (float -> int) is refused."""
    tensor = as_tensor(value, place=place, where=f"feed '{name}'")
    array = tensor.array
    want = to_numpy_dtype(var.dtype) if var.type == VarType.LOD_TENSOR else None
    if want is not None and array.dtype != want:
        array = lossless_cast(array, want, f"feed '{name}'")
        tensor = LoDTensor(array, tensor._lod)
    if var.need_check_feed and var.shape:
        shape = var.shape
        got = array.shape
        if len(got) != len(shape):
            conformed = _to_rank(got, shape)
            if conformed is not None:  # [15, 1] ids into a [-1] variable: the same values
                array = array.reshape(conformed)
                tensor = LoDTensor(array, tensor._lod)
                got = conformed
        if len(got) != len(shape) or any(s >= 0 and s != g for s, g in zip(shape, got)):
            raise InvalidArgument(f"feed '{name}': shape expected {list(shape)} (-1 is any "
                                  f"size), but received {list(got)}")
    if place.device != "cpu" and isinstance(array, np.ndarray):
        tensor = LoDTensor(place.xp.asarray(array), tensor._lod)
    return tensor


def declared_scalar(var):
    """True for a variable declared [1] in a program of Fluid 1.x shapes, where a kernel's
    0-D result (a mean, a full reduction) stands for that [1]."""
    return var is not None and var.shape == (1,)


def as_declared_scalar(value):
    """A 0-D tensor as the [1] its variable declares (Fluid 1.x had no 0-D tensors)."""
    if isinstance(value, LoDTensor) and getattr(value.array, "ndim", None) == 0:
        return LoDTensor(value.array.reshape(1), value._lod)
    return value


class FetchedArray(np.ndarray):
    """What a run fetches: an ndarray that, as NumPy's arrays did when Fluid 1.x scripts
    were written, also converts to a Python scalar when it holds one element, so the
    scripts' ``float(loss)``, ``"%.2f" % row`` and ``loss[0]`` all work under NumPy 2
    (slices and results of arithmetic stay FetchedArrays; shown as a plain array)."""

    def _item(self, convert):
        if self.size != 1:
            raise TypeError(f"only one-element arrays convert to a Python scalar, but "
                            f"this one has shape {self.shape}")
        return convert(self.reshape(-1)[0])

    def __float__(self):
        return self._item(float)

    def __int__(self):
        return self._item(int)

    def __complex__(self):
        return self._item(complex)

    def __repr__(self):
        return repr(self.view(np.ndarray))


def as_numpy(value):
    """A fetched value as the caller gets it with ``return_numpy``: a LoDTensor as a
    FetchedArray, a tensor array as a list of them, anything else as it is."""
    if isinstance(value, LoDTensor):
        return np.asarray(value).view(FetchedArray)
    if isinstance(value, LoDTensorArray):
        return [np.asarray(t).view(FetchedArray) for t in value]
    return value


def fetched(value):
    """``as_numpy(value)``, a host tensor's array viewed straight away (what a run returns
    most: the op_overhead fixed cost of a run 12.8-13.1 -> 11.5-12.1x ``np.add``)."""
    if value.__class__ is LoDTensor and value.array.__class__ is np.ndarray:
        return value.array.view(FetchedArray)
    return as_numpy(value)


def dtype_of(var):
    return convert_dtype(var.dtype)


def one_place_feed(feeds):
    """A compiled program's feed given per place (a list of dicts, one per place, as Fluid's
    data-parallel runs take it) as the one place here runs it: one dict, or the places'
    batches joined in order (what they would have split)."""
    if not feeds or not all(isinstance(f, dict) for f in feeds):
        raise InvalidType(expected("Executor.run", "feed of a CompiledProgram",
                                   "a dict, or a list of dicts (one per place)",
                                   repr(feeds)[:60]))
    if len(feeds) == 1:
        return feeds[0]
    names = set(feeds[0])
    if any(set(f) != names for f in feeds):
        raise InvalidArgument(expected("Executor.run", "the places' feeds",
                                       "dicts with the same names",
                                       [sorted(f) for f in feeds]))
    if any(isinstance(f[name], LoDTensor) or isinstance(f[name], tuple)
           for f in feeds for name in names):
        raise Unimplemented(expected("Executor.run", "the places' feeds",
                                     "dense arrays to join (one dict when they carry LoD)",
                                     "LoD tensors in several places' feeds"))
    return {name: np.concatenate([np.asarray(f[name]) for f in feeds]) for name in names}
