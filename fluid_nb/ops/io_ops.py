"""feed and fetch: how values enter and leave a run (columns of the feed/fetch lists)."""
from ..exec.tensor import LoDTensor
from .registry import def_op


def _feed(ctx, feed_list):
    col = ctx.attrs["col"]
    if col >= len(feed_list):
        from ..errors import OutOfRange
        raise OutOfRange(f"feed: column expected < {len(feed_list)}, but received {col}")
    return feed_list[col]


def _fetch(ctx, value):
    holder = ctx.scope.find_var(ctx.op.outputs["Out"][0])
    col = ctx.attrs["col"]
    if isinstance(value, LoDTensor):
        value = LoDTensor(value.array.copy(), value._lod)  # fetched values are the caller's
    fetched = holder.value
    while len(fetched) <= col:
        fetched.append(None)
    fetched[col] = value
    return None


def _no_shape(ctx):
    """feed/fetch shapes come from the variables they fill; nothing to infer."""


def_op("feed", inputs=["X"], outputs=["Out"], attrs={"col": ("int", 0)}, infer_shape=_no_shape,
       kernel=_feed, lod_aware=True, doc="Out = X[col], X the feed list of this run.")
def_op("fetch", inputs=["X"], outputs=["Out"], attrs={"col": ("int", 0)}, infer_shape=_no_shape,
       kernel=_fetch, lod_aware=True, doc="Out[col] = X, Out the fetch list of this run.")


def _read(ctx, reader):
    """The next batch of the loader behind the Reader variable (``fluid.io.DataLoader``
    made with ``iterable=False``); EOFException when its pass is over."""
    from ..reader.loader import next_batch
    return next_batch(ctx.op.inputs["Reader"][0])


def_op("read", inputs=["Reader?"], outputs=["Out[]"], attrs={"throw_eof_exp": ("bool", True)},
       infer_shape=_no_shape, kernel=_read, lod_aware=True, traits={"runtime_outputs"},
       doc="Out = the next batch of the Reader's loader, one tensor per output.")
