"""Input layers: ``fluid.layers.data`` (Fluid 1.x) and ``fluid.data`` (Fluid 1.6+)."""
from ...errors import InvalidArgument, InvalidType
from ...tensor.dtypes import VarType
from ..layer_helper import LayerHelper
from .arg_checks import NON_NEGATIVE_INT, boolean, checks, data_shape, dtype, string

__all__ = ["data", "py_reader", "create_py_reader_by_data", "read_file", "double_buffer",
           "load"]


def _check_name_shape(where, name, shape):
    if not isinstance(name, str):
        raise InvalidType(f"{where}: name expected str, but received {type(name).__name__}")
    if not isinstance(shape, (list, tuple)):
        raise InvalidType(f"{where}: shape expected list or tuple, but received "
                          f"{type(shape).__name__}")


@checks(name=string, shape=data_shape, append_batch_size=boolean, dtype=dtype,
        lod_level=NON_NEGATIVE_INT, stop_gradient=boolean)
def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0,
         type=VarType.LOD_TENSOR, stop_gradient=True, value=None):
    """A global input variable to feed. With ``append_batch_size`` (and no None or negative
    dim given) the batch dim -1 is put in front: ``data('x', [13])`` has shape [-1, 13].

    As in Fluid 1.x, fed shapes are not checked (``need_check_feed`` is False; ``fluid.data``
    checks). ``value=`` (an array) is kept on the variable as ``_sample_value`` for live mode.
    """
    _check_name_shape("data", name, shape)
    helper = LayerHelper("data", name=name)
    shape = list(shape)
    for i, d in enumerate(shape):
        if d is None:
            shape[i] = -1
            append_batch_size = False
        elif d < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    var = helper.create_global_variable(name=name, shape=shape, dtype=dtype, type=type,
                                        stop_gradient=stop_gradient, lod_level=lod_level,
                                        is_data=True, need_check_feed=False)
    if value is not None:
        var._sample_value = value
    return var


def fluid_data(name, shape, dtype="float32", lod_level=0, value=None):
    """``fluid.data``: the shape as given (None or -1 for any size); fed values are
    checked against it (``need_check_feed``)."""
    _check_name_shape("data", name, shape)
    helper = LayerHelper("data", name=name)
    shape = [-1 if d is None else int(d) for d in shape]
    var = helper.create_global_variable(name=name, shape=shape, dtype=dtype,
                                        type=VarType.LOD_TENSOR, stop_gradient=True,
                                        lod_level=lod_level, is_data=True, need_check_feed=True)
    if value is not None:
        var._sample_value = value
    return var


# --- readers: a program that feeds itself (Fluid 1.x's py_reader) ----------------------------
def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """A reader variable whose ``read_file`` gives the data variables (one per entry of
    ``shapes``/``dtypes``/``lod_levels``). Give it a source with
    ``decorate_paddle_reader`` / ``decorate_sample_list_generator`` (batches of samples)
    or ``decorate_tensor_provider`` / ``decorate_batch_generator`` (batches of arrays);
    then ``reader.start()``, ``exe.run`` until ``fluid.core.EOFException``,
    ``reader.reset()`` (see ``fluid.io.DataLoader``, which this uses)."""
    from ...framework import unique_name
    from ...framework.program import default_main_program
    if not isinstance(shapes, (list, tuple)) or not isinstance(dtypes, (list, tuple)) or \
            len(shapes) != len(dtypes) or not shapes:
        raise InvalidArgument(f"py_reader: shapes and dtypes expected lists of the same "
                              f"non-zero length, but received {shapes!r} and {dtypes!r}")
    lod_levels = list(lod_levels) if lod_levels is not None else [0] * len(shapes)
    block = default_main_program().global_block()
    base = name or unique_name.generate("py_reader")
    feeds = [block.create_var(name=f"{base}_out_{i}", shape=tuple(-1 if d is None else d
                                                                 for d in shape),
                              dtype=dtype_, lod_level=lod)
             for i, (shape, dtype_, lod) in enumerate(zip(shapes, dtypes, lod_levels))]
    return _reader_variable(block, base, feeds)


def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """A py_reader whose ``read_file`` fills the given data variables themselves."""
    from ...framework import unique_name
    from ...framework.program import Variable, default_main_program
    if not isinstance(feed_list, (list, tuple)) or not feed_list or not all(
            isinstance(v, Variable) for v in feed_list):
        raise InvalidArgument(f"create_py_reader_by_data: feed_list expected a non-empty list "
                              f"of Variables, but received {feed_list!r}")
    block = default_main_program().global_block()
    return _reader_variable(block, name or unique_name.generate("py_reader"), list(feed_list))


def _reader_variable(block, name, feeds):
    from ..reader.loader import GeneratorLoader
    reader = block.create_var(name=name, type=VarType.READER, persistable=True)
    loader = GeneratorLoader(feeds, iterable=True)  # made non-iterable by read_file
    reader._loader, reader._feeds = loader, feeds
    for method in ("start", "reset", "decorate_sample_list_generator",
                   "decorate_batch_generator", "decorate_sample_generator"):
        setattr(reader, method, getattr(loader, method))
    reader.decorate_paddle_reader = loader.set_sample_list_generator
    reader.decorate_tensor_provider = loader.set_batch_generator
    return reader


def read_file(reader):
    """The data variables of a py_reader, filled from it at every run (a ``read`` op at the
    head of the program); one Variable, or a list of them."""
    loader = getattr(reader, "_loader", None)
    if loader is None:
        raise InvalidArgument(f"read_file: reader expected a variable made by py_reader or "
                              f"create_py_reader_by_data, but received {reader!r}")
    if loader._iterable:
        loader._iterable = False
        loader._add_read_op(reader.name)
    feeds = reader._feeds
    return feeds[0] if len(feeds) == 1 else list(feeds)


def double_buffer(reader, place=None, name=None):
    """Fluid prefetches the reader's next batch onto the device; batches are made in the
    calling thread here, so the reader is returned as it is."""
    return reader


def load(out, file_path, load_as_fp16=None):
    """Fill ``out`` with the tensor saved at ``file_path`` (Paddle's tensor file, as
    ``fluid.io.save_vars`` writes one per variable) whenever the program runs."""
    helper = LayerHelper("load", **locals())
    attrs = {"file_path": file_path}
    if load_as_fp16 is not None:
        attrs["load_as_fp16"] = bool(load_as_fp16)
    helper.append_op(type="load", inputs={}, outputs={"Out": [out]}, attrs=attrs)
