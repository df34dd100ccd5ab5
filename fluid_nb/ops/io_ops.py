"""feed and fetch: how values enter and leave a run (columns of the feed/fetch lists)."""
import numpy as np

from ..tensor.tensor import LoDTensor
from ..tensor.transfer import to_host
from ..framework.registry import def_op


def _feed(ctx, feed_list):
    col = ctx.attrs["col"]
    if col >= len(feed_list):
        from ..errors import OutOfRange
        raise OutOfRange(f"feed: column expected < {len(feed_list)}, but received {col}")
    return feed_list[col]


def _fetch(ctx, value):
    holder = ctx.scope.find_var(ctx.op.outputs["Out"][0])
    col = ctx.attrs["col"]
    if isinstance(value, LoDTensor) and value.array is not None:
        # fetched values are the caller's, on the host as Paddle's fetch leaves them: a
        # device tensor comes back with one copy
        array = value.array
        value = LoDTensor(array.copy() if array.__class__ is np.ndarray else to_host(array),
                          value._lod)
    fetched = holder.value
    while len(fetched) <= col:
        fetched.append(None)
    fetched[col] = value
    return None


def _fetch_step(ctx, ins, out, kernel_step):
    """A host tensor fetched into a column the fetch list has: its array copied straight
    into the list, as the kernel does without its lookups (the fixed cost of every
    ``Executor.run``, op_overhead.py: 9.2-9.5 -> 8.4-8.5 µs); anything else goes to the
    kernel."""
    source, col = ins[0], ctx.attrs["col"]
    new = LoDTensor

    def step():
        value, fetched = source.value, out.value
        if value.__class__ is new and value.array.__class__ is np.ndarray \
                and col < len(fetched):
            fetched[col] = new(value.array.copy(), value._lod)
        else:
            kernel_step()
    return step


def _no_shape(ctx):
    """feed/fetch shapes come from the variables they fill; nothing to infer."""


def_op("feed", inputs=["X"], outputs=["Out"], attrs={"col": ("int", 0)}, infer_shape=_no_shape,
       kernel=_feed, lod_aware=True, doc="Out = X[col], X the feed list of this run.")
def_op("fetch", inputs=["X"], outputs=["Out"], attrs={"col": ("int", 0)}, infer_shape=_no_shape,
       kernel=_fetch, host_step=_fetch_step, lod_aware=True,
       host_reads="X: a fetched value goes to the host",
       doc="Out[col] = X, Out the fetch list of this run (a device tensor copied to the "
           "host).")


# its kernel reads the loader objects of fluid_nb.api.reader, which attaches it
def_op("read", inputs=["Reader?"], outputs=["Out[]"], attrs={"throw_eof_exp": ("bool", True)},
       infer_shape=_no_shape, lod_aware=True, traits={"runtime_outputs", "stateful"},
       doc="Out = the next batch of the Reader's loader, one tensor per output.")


# --- load: a tensor from a file of Paddle's tensor stream ------------------------------------------
def _load(ctx):
    from ..errors import NotFound, expected
    from ..proto.tensor_stream import read_one
    path = ctx.attrs["file_path"]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise NotFound(expected("load", "file_path", "a readable tensor file",
                                f"{path!r} ({exc.strerror})")) from None
    array, lod = read_one(data, path)
    if ctx.attrs["load_as_fp16"]:
        array = array.astype("float16")
    return LoDTensor(ctx.xp.asarray(array), lod)


def_op("load", inputs=[], outputs=["Out"],
       attrs={"file_path": ("string", None), "load_as_fp16": ("bool", False),
              "seek": ("long", -1), "shape": ("longs", [])},
       infer_shape=_no_shape, kernel=_load, lod_aware=True, traits=("stateful",),  # (a file)
       doc="Out = the tensor saved at file_path (Paddle's LoDTensor stream, as save and "
           "save_vars write one variable), as float16 with load_as_fp16.")


# --- print: show a tensor as the program runs -------------------------------------------------
def _print(ctx, x):
    import numpy as np
    a = ctx.attrs
    counter = ctx.cache.get("printed", 0)
    phase = a["print_phase"].upper()
    wanted = phase == "BOTH" or (phase == "FORWARD") == a["is_forward"]
    if wanted and (a["first_n"] < 0 or counter < a["first_n"]):
        ctx.cache["printed"] = counter + 1
        name = ctx.op.inputs["In"][0]
        lines = [a["message"]] if a["message"] else []
        if a["print_tensor_name"]:
            lines.append(f"Tensor[{name}]")
        array = np.asarray(x)
        if a["print_tensor_type"]:
            lines.append(f"\tdtype: {array.dtype}")
        if a["print_tensor_shape"]:
            lines.append(f"\tshape: {list(array.shape)}")
        if a["print_tensor_lod"] and isinstance(x, LoDTensor) and x.lod():
            lines.append(f"\tLoD: {x.lod()}")
        flat = array.reshape(-1)
        shown = flat if a["summarize"] < 0 else flat[:a["summarize"]]
        lines.append("\tdata: " + " ".join(str(v) for v in shown.tolist()))
        print("\n".join(lines), flush=True)
    return x


def _print_grad(g):
    attrs = dict(g.attrs, is_forward=False)
    return [g.op("print", {"In": g.output_grad("Out")}, {"Out": g.input_grad("In")}, attrs)]


def_op("print", inputs=["In"], outputs=["Out"],
       attrs={"first_n": ("int", -1), "message": ("string", ""), "summarize": ("int", 20),
              "print_tensor_name": ("bool", True), "print_tensor_type": ("bool", True),
              "print_tensor_shape": ("bool", True), "print_tensor_lod": ("bool", True),
              "print_phase": ("string", "BOTH"), "is_forward": ("bool", True)},
       infer_shape=lambda ctx: ctx.set_output("Out", ctx.input_shape("In"),
                                              ctx.input_dtype("In")),
       grad=_print_grad, kernel=_print, lod_aware=True,
       traits=("stateful",),  # (what it prints: it runs though nothing reads its Out)
       host_reads="In: the values it prints",
       doc="Out = In; prints In (message, name, dtype, shape, LoD, the first summarize "
           "values) at most first_n times, in the forward pass, the backward one (the grad "
           "op prints the gradient) or both, as print_phase says.")


# --- py_func: a Python function as an op -------------------------------------------------------
#: callable id -> the Python function (the program holds only the id, as in Fluid)
PY_FUNCS = []


def _py_func(ctx, xs):
    from ..errors import InvalidArgument, expected
    func = PY_FUNCS[ctx.attrs["forward_callable_id"]]
    skipped = set(ctx.attrs.get("skip_vars_in_backward_input") or ())
    xs = xs or []  # a function of no inputs: the op has no X
    names = ctx.op.inputs.get("X", [])
    args = [x for name, x in zip(names, xs) if name not in skipped] \
        if not ctx.attrs["is_forward"] else list(xs)
    result = func(*args)
    outs = ctx.op.outputs.get("Out", [])
    results = [] if result is None else list(result) if isinstance(result, (list, tuple)) \
        else [result]
    if len(results) != len(outs):
        raise InvalidArgument(expected("py_func", "the function's results",
                                       f"{len(outs)} (one per out variable)", len(results)))
    # the function's host results go to the op's place (a copy to a device)
    return [r if isinstance(r, LoDTensor) or r is None else LoDTensor(ctx.xp.asarray(r))
            for r in results]


def _py_func_grad(g):
    backward = g.attrs["backward_callable_id"]
    if backward < 0:
        return []
    skip = set(g.attrs.get("skip_vars_in_backward_input") or ())
    ins = [n for n in g.input("X") if n not in skip] + \
        [n for n in g.output("Out") if n not in skip] + g.output_grad("Out")
    attrs = dict(g.attrs, forward_callable_id=backward, backward_callable_id=-1,
                 is_forward=False, skip_vars_in_backward_input=[])
    return [g.op("py_func", {"X": ins}, {"Out": g.input_grad("X")}, attrs)]


def_op("py_func", inputs=["X[]?"], outputs=["Out[]?"],
       attrs={"forward_callable_id": ("int", -1), "backward_callable_id": ("int", -1),
              "skip_vars_in_backward_input": ("strings", []), "is_forward": ("bool", True)},
       infer_shape=_no_shape, grad=_py_func_grad, kernel=_py_func, lod_aware=True,
       traits={"runtime_outputs", "stateful"},  # (what the function does is its own)
       host_reads="X: the Python function gets the tensors; np.asarray(x) copies one to the "
                  "host",
       doc="Out = func(*X), func the Python function registered under forward_callable_id "
           "(its results become the Out tensors); the grad op calls backward_callable_id's "
           "function with X, Out and Out@GRAD (less skip_vars_in_backward_input).")
