"""Ops that write and read parameter files in Paddle's tensor stream
(:mod:`fluid_nb.proto.tensor_stream`): ``save`` (one variable to one file), ``save_combine``
(several variables, back to back, in one file) and ``load_combine`` (the reverse). Programs
that Paddle's save and load helpers build carry them."""
import io
import os

from ..errors import InvalidArgument, NotFound, PreconditionNotMet, expected
from ..framework.registry import def_op
from ..tensor.tensor import LoDTensor
from ..tensor.transfer import to_host


def _record(out, tensor, as_fp16):
    from ..proto.tensor_stream import write_lod_tensor  # (protobuf: loaded when saving)
    array = to_host(tensor.array)
    if as_fp16 and array.dtype.kind == "f":
        array = array.astype("float16")
    write_lod_tensor(out, array, tensor.lod())


def _write(where, path, overwrite, tensors, as_fp16):
    if not path:
        raise InvalidArgument(expected(where, "attribute 'file_path'", "a file path", "''"))
    if os.path.exists(path) and not overwrite:
        raise PreconditionNotMet(expected(where, "attribute 'file_path'",
                                          "a path with no file yet (overwrite is false)",
                                          repr(path)))
    buffer = io.BytesIO()
    for i, tensor in enumerate(tensors):
        if tensor is None or tensor.array is None:
            raise PreconditionNotMet(expected(where, f"input 'X' #{i}", "a tensor with a value",
                                              "no value"))
        _record(buffer, tensor, as_fp16)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())


_SAVE_ATTRS = {"file_path": ("string", ""), "overwrite": ("bool", True),
               "save_as_fp16": ("bool", False)}


def _save(ctx, x):
    a = ctx.attrs
    _write("save", a["file_path"], a["overwrite"], [x], a["save_as_fp16"])


def _save_combine(ctx, xs):
    a = ctx.attrs
    _write("save_combine", a["file_path"], a["overwrite"], xs, a["save_as_fp16"])


def _load_combine(ctx):
    a = ctx.attrs
    path = a["file_path"]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise NotFound(expected("load_combine", "attribute 'file_path'",
                                "a readable parameter file", f"{path!r} ({exc.strerror})")) \
            from None
    from ..proto.tensor_stream import read_lod_tensors  # (protobuf: loaded when loading)
    records = read_lod_tensors(data, path)
    wanted = len(ctx.output_names("Out"))
    if len(records) != wanted:
        raise InvalidArgument(expected("load_combine", f"the tensors in {path!r}",
                                       f"{wanted} (one per output)", len(records)))
    outs = []
    for array, lod in records:
        if a["load_as_fp16"] and array.dtype.kind == "f":
            array = array.astype("float16")
        outs.append(LoDTensor(ctx.xp.asarray(array), lod))
    return outs


def _no_outputs(ctx):
    """save and save_combine write a file; they give no variable a shape."""


def_op("save", inputs=["X"], attrs=_SAVE_ATTRS, infer_shape=_no_outputs, kernel=_save,
       lod_aware=True, traits=("stateful",),
       host_reads="X: its value is written to a file",
       doc="Writes X (with its LoD) to file_path as one tensor record; refuses an existing "
           "file unless overwrite; float tensors as float16 with save_as_fp16.")
def_op("save_combine", inputs=["X[]"], attrs=_SAVE_ATTRS, infer_shape=_no_outputs,
       kernel=_save_combine, lod_aware=True, traits=("stateful",),
       host_reads="X: the values are written to a file",
       doc="Writes every X, in order, to file_path as tensor records back to back (a "
           "combined parameter file).")
def_op("load_combine", outputs=["Out[]"],
       attrs={"file_path": ("string", ""), "load_as_fp16": ("bool", False),
              "model_from_memory": ("bool", False)},
       infer_shape=_no_outputs, kernel=_load_combine, lod_aware=True,
       traits=("runtime_outputs", "stateful"),  # (a file)
       doc="Out[i] = the i-th tensor record of file_path (with its LoD), one per output; "
           "float16 with load_as_fp16.")
