"""The ops of parameter-server training, as Fluid 1.8's ``DistributeTranspiler`` emits them:
``send``, ``recv``, ``send_barrier``, ``fetch_barrier``, ``listen_and_serv`` (defined here
without kernels: the RPC runtime attaches them) and the two split ops the trainer runs
before sending, ``split_byref`` and ``split_selected_rows`` (with their kernels).

Slots, attributes and defaults are Paddle 1.8's op makers', so transpiled programs print,
save and load as Paddle's do. Paddle's duplicable inputs may be given empty (the trainer's
startup ``recv`` has no ``X``, a server that holds no parameter block receives nothing), so
the RPC ops' ``X`` slots are dispensable here. What the runtime's kernels do with them
(the contract the transpiler's programs rely on; in a sync step the runtime carries the
sends, the send barrier, the recvs and the fetch barrier together, one call per server:
what arrives where, in what order, is the same):

``send``
    For each ``X[i]``, the variable's value (LoDTensor or SelectedRows) goes to the server
    ``epmap[i]`` and arrives in that server's scope under the same name ``X[i]``. With
    ``send_varnames`` non-empty (the transpiler's ``runtime_split_send_recv``) X holds one
    variable, cut by rows into ``sections`` and sent as ``send_varnames[j]`` to ``epmap[j]``.
    An X that has no value yet is skipped. ``Out`` is a dummy that only orders the ops.
    With ``use_send_handler`` false (the step counter of asynchronous learning-rate
    decay, ``@LR_DECAY_COUNTER@.trainer_<id>``) X goes to every endpoint of ``epmap``; the
    server adds it into its copy (``merge_add``) and runs its learning-rate block.
``recv``
    For each ``Out[i]``, asks ``epmap[i]`` for the variable named ``varnames[i]`` (when
    given, else ``Out[i]``) and writes it into ``Out[i]``; with ``recv_varnames`` non-empty,
    Out holds one variable assembled, by rows, from the ``recv_varnames[j]`` of
    ``epmap[j]``. ``with_barrier`` false asks without waiting for the server's barrier.
    ``X`` is a dummy input that orders it after the sends (or the send barrier).
``send_barrier``
    Tells every server in ``endpoints`` that trainer ``trainer_id`` has sent all its
    gradients for this step (``half_async`` marks the half-asynchronous mode's barrier).
``fetch_barrier``
    Tells every server in ``endpoints`` that trainer ``trainer_id`` has received all its
    parameters for this step. Its ``Out`` lists the received variables again so that later
    ops are ordered after it (Paddle's write-after-write dependency); it writes nothing, so
    its outputs carry the ``control_outputs`` trait and verify does not count them as a
    second write.
``listen_and_serv``
    Serves ``endpoint`` (one of the trainers' epmap entries) as server ``pserver_id``.
    ``grad_to_block_id`` entries read ``"grad_name:block_idx"``: the optimize block that
    consumes that received gradient. In ``distributed_mode`` 0 (sync) each step waits for
    ``Fanin`` send barriers, runs ``lr_decay_block_id`` (when >= 0) and then every block of
    ``optimize_blocks`` in order on the server scope, then answers gets until ``Fanin``
    fetch barriers have arrived; modes 1 (async) and 2 (half-async) run a gradient's block
    as soon as it arrives (``sparse_grad_to_param`` maps a SelectedRows gradient to its
    parameter). ``X`` lists the variables the server receives. With more than one trainer
    in sync mode, trainer ``t``'s gradient ``g`` is received as ``g.trainer_t`` and the
    optimize block sums and scales them.
``checkpoint_notify``
    Each server of ``epmap`` saves its shard of the training state (every persistable
    variable it holds, and its round) into ``dir/<lookup_table>_<i>`` (``dir/pserver_<i>``
    when ``lookup_table`` is empty) in :mod:`fluid_nb.distributed.checkpoint`'s format;
    the op returns once every server has written it whole.
``distributed_lookup_table``
    The trainer's lookup in a table kept on the servers (``embedding(is_sparse=True)``,
    whose ``remote_prefetch`` is set): the table's rows are cut into blocks of
    ``height_sections`` rows, block ``j`` named ``table_names[j]`` on ``endpoints[j]``. For
    each ``Ids[i]``, each id goes to the block holding it, renumbered from that block's first
    row, the servers answer with those rows, and ``Outputs[i]`` holds them in the ids' order
    (zeros where an id equals ``padding_idx``), shaped as ``lookup_table_version``'s output.
    ``W`` is the trainer's placeholder of the table (``fake_init``): only its shape is read.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, SelectedRows
from ..tensor.dtypes import VarType
from ..framework.registry import def_op, no_gradient
from .creation import _as_declared_out
from .shape import split_sizes

#: Paddle's default endpoint in the RPC ops' makers
DEFAULT_ENDPOINT = "127.0.0.1:6164"

#: listen_and_serv's ``distributed_mode`` values (Fluid 1.8's DistributedMode)
SYNC, ASYNC, HALF_ASYNC, GEO = 0, 1, 2, 3


def _no_shape(ctx):
    """The RPC ops leave shapes to the variables they name (Paddle's are empty too)."""


_RPC = dict(infer_shape=_no_shape, grad=no_gradient, lod_aware=True,
            traits=("stateful", "runtime_outputs", "optional_outputs"))

def_op("send", inputs=["X[]?"], outputs=["Out[]"],
       attrs={"trainer_id": ("int", 0),
              "epmap": ("strings", [DEFAULT_ENDPOINT]),
              "sections": ("longs", []),
              "send_varnames": ("strings", []),
              "num": ("int", 0),
              "merge_add": ("bool", False),
              "use_send_handler": ("bool", True)},
       doc="Send each X[i] to the server epmap[i], where it arrives under its own name "
           "(send_varnames: X[0] cut by rows into sections, piece j sent as "
           "send_varnames[j] to epmap[j]). Out: a dummy for ordering.", **_RPC)

def_op("recv", inputs=["X[]?"], outputs=["Out[]"],
       attrs={"epmap": ("strings", []),
              "trainer_id": ("int", 0),
              "with_barrier": ("bool", True),
              "varnames": ("strings", []),
              "recv_varnames": ("strings", []),
              "do_not_run": ("int", 0)},
       doc="Out[i] = the variable varnames[i] (default Out[i]) of the server epmap[i] "
           "(recv_varnames: Out[0] = the rows of recv_varnames[j] from epmap[j], stacked). "
           "X: a dummy for ordering.", **_RPC)

def_op("send_barrier", inputs=["X[]?"], outputs=["Out[]"],
       attrs={"trainer_id": ("int", 0),
              "endpoints": ("strings", [DEFAULT_ENDPOINT]),
              "half_async": ("bool", False)},
       doc="Tell every server in endpoints that this trainer has sent this step's "
           "gradients.", **_RPC)

def_op("fetch_barrier", inputs=["X[]?"], outputs=["Out[]"],
       attrs={"trainer_id": ("int", 0),
              "endpoints": ("strings", [DEFAULT_ENDPOINT])},
       infer_shape=_no_shape, grad=no_gradient, lod_aware=True,
       traits=("stateful", "runtime_outputs", "optional_outputs", "control_outputs"),
       doc="Tell every server in endpoints that this trainer has received this step's "
           "parameters. Out names the received variables only to order later ops after "
           "it; nothing is written into them.")

def_op("listen_and_serv", inputs=["X[]?"], outputs=[],
       attrs={"endpoint": ("string", DEFAULT_ENDPOINT),
              "pserver_id": ("int", -1),
              "grad_to_block_id": ("strings", []),
              "distributed_mode": ("int", SYNC),
              "dc_asgd": ("bool", False),
              "optimize_blocks": ("blocks", []),
              "prefetch_var_name_to_block_id": ("strings", []),
              "sparse_grad_to_param": ("strings", []),
              "Fanin": ("int", 1),
              "checkpint_block_id": ("int", -1),
              "lr_decay_block_id": ("int", -1),
              "rpc_get_thread_num": ("int", 1),
              "rpc_send_thread_num": ("int", 1),
              "rpc_prefetch_thread_num": ("int", 1)},
       doc="Serve endpoint: receive the gradients X from Fanin trainers, run the "
           "optimize_blocks (grad_to_block_id: 'grad:block') on them, serve the updated "
           "parameters; in sync mode (distributed_mode 0) step by step between the "
           "trainers' send and fetch barriers.", **_RPC)


# --- split_byref ------------------------------------------------------------------------------
def _split_byref_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.check(len(shape) >= 1, "input 'X'", "a tensor of rank >= 1", list(shape))
    n_out = len(ctx.op.outputs["Out"])
    sizes = split_sizes("split_byref", shape[0], ctx.attr("num"), ctx.attr("sections"), n_out)
    ctx.set_outputs("Out", [[size] + list(shape[1:]) for size in sizes], ctx.input_dtype("X"))


def _split_byref(ctx, x):
    sizes = split_sizes("split_byref", x.shape[0], ctx.attrs["num"], ctx.attrs["sections"],
                        len(ctx.output_names("Out")))
    # views of X, not copies: the pieces share X's memory, as Paddle's do
    return ctx.xp.split(x, np.cumsum(sizes[:-1]).tolist(), axis=0)


def _split_byref_grad(g):
    return [g.op("concat", {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")},
                 {"axis": 0})]


def_op("split_byref", inputs=["X"], outputs=["Out[]"],
       attrs={"sections": ("ints", []), "num": ("int", 0)},
       infer_shape=_split_byref_infer, grad=_split_byref_grad, kernel=_split_byref,
       doc="Out = X cut by rows (axis 0) into num equal pieces or pieces of sections rows, "
           "each a view of X's memory (no copy). The gradient is concat(Out@GRAD) on axis 0.")


# --- split_selected_rows ----------------------------------------------------------------------
def _split_selected_rows_infer(ctx):
    kind = ctx.input_var_type("X")
    ctx.check(kind == VarType.SELECTED_ROWS, "input 'X'", "a SELECTED_ROWS variable",
              getattr(kind, "name", kind))
    sections = ctx.attr("height_sections")
    n_out = len(ctx.op.outputs["Out"])
    ctx.check(len(sections) == n_out, "attribute 'height_sections'",
              f"{n_out} entries (one per output)", list(sections))
    shape = ctx.input_shape("X")
    for i, height in enumerate(sections):
        ctx.set_output("Out", [height] + list(shape[1:]), ctx.input_dtype("X"), index=i,
                       type=VarType.SELECTED_ROWS)


def _split_selected_rows(ctx, x):
    if not isinstance(x, SelectedRows):
        raise InvalidArgument(expected("split_selected_rows", "input X", "a SelectedRows",
                                       type(x).__name__))
    sections = list(ctx.attrs["height_sections"])
    starts = np.cumsum([0] + sections)
    rows = np.asarray(x.rows(), dtype=np.int64)
    # as Fluid's: the sections need not add up to X's height, but every row id is below
    # the height and inside a section
    outside = (rows < 0) | (rows >= min(x.height(), starts[-1]))
    if outside.any():
        raise InvalidArgument(expected("split_selected_rows", "X's row ids",
                                       f"in [0, {min(x.height(), int(starts[-1]))}) (below "
                                       f"its height {x.height()} and inside height_sections "
                                       f"{sections})", int(rows[outside][0])))
    values = x.value.array
    # row r belongs to the piece whose [start, start + height) holds it, renumbered from 0
    piece = np.searchsorted(starts, rows, side="right") - 1
    outs = []
    for i, height in enumerate(sections):
        mine = np.nonzero(piece == i)[0]
        outs.append(SelectedRows((rows[mine] - starts[i]).tolist(), height,
                                 LoDTensor(values[ctx.xp.asarray(mine)])))
    return outs


def_op("split_selected_rows", inputs=["X"], outputs=["Out[]"],
       attrs={"height_sections": ("longs", [])},
       infer_shape=_split_selected_rows_infer, kernel=_split_selected_rows, lod_aware=True,
       traits=("runtime_outputs",),
       doc="Out[i] = the rows of SelectedRows X that fall in [s_i, s_i + height_sections[i]) "
           "(s_i the sum of the earlier heights), renumbered from s_i to 0, with height "
           "height_sections[i]. No gradient here (the transpiler splits gradients after "
           "backward).")


# --- the trainer's side of a table kept on the servers --------------------------------------
def _fake_init_infer(ctx):
    shape = ctx.attr("shape")
    ctx.check(shape is not None and len(shape) > 0 and all(d > 0 for d in shape),
              "attribute 'shape'", "positive dims", shape)
    ctx.set_output("Out", list(shape))


def _fake_init(ctx):
    # a zero-strided view of one zero: the shape the table has, without its memory (the
    # value of an Out declared SelectedRows)
    return _as_declared_out(ctx, ctx.xp.broadcast_to(ctx.xp.zeros((), dtype="float32"),
                                                     tuple(ctx.attrs["shape"])))


def_op("fake_init", outputs=["Out"], attrs={"shape": ("longs", None)},
       infer_shape=_fake_init_infer, kernel=_fake_init, grad=no_gradient,
       doc="Out = a placeholder of the given shape that holds no memory of its own (reading "
           "it gives zeros): the trainer's copy of a table whose rows live on the servers.")


def _distributed_lookup_infer(ctx):
    w = ctx.input_shape("W")
    ctx.check(len(w) == 2, "input 'W'", "rank 2 ([rows, width])", list(w))
    names, sections = ctx.attr("table_names"), ctx.attr("height_sections")
    endpoints = ctx.attr("endpoints")
    ctx.check(len(names) == len(sections) == len(endpoints) and names,
              "attributes 'table_names', 'height_sections', 'endpoints'",
              "one entry per table block in each",
              f"{len(names)}, {len(sections)}, {len(endpoints)}")
    version = ctx.attr("lookup_table_version")
    ctx.check(version in ("lookup_table", "lookup_table_v2"), "attribute "
              "'lookup_table_version'", "'lookup_table' or 'lookup_table_v2'", repr(version))
    for i, ids in enumerate(ctx.input_shapes("Ids")):
        ctx.check(len(ids) == 2, f"input 'Ids'[{i}]", "rank 2", list(ids))
        shape = [ids[0], w[1]] if version == "lookup_table" else [ids[0], ids[1], w[1]]
        ctx.set_output("Outputs", shape, ctx.input_dtype("W"), index=i,
                       lod_level=ctx.input_vars("Ids")[i].lod_level)


def_op("distributed_lookup_table", inputs=["Ids[]", "W"], outputs=["Outputs[]"],
       attrs={"table_names": ("strings", [""]),
              "height_sections": ("longs", []),
              "endpoints": ("strings", [DEFAULT_ENDPOINT]),
              "trainer_id": ("int", 0),
              "lookup_table_version": ("string", "lookup_table"),
              "padding_idx": ("long", -1),
              "dtype": ("int", int(VarType.FP32))},
       infer_shape=_distributed_lookup_infer, grad=no_gradient, lod_aware=True,
       traits=("stateful", "runtime_outputs"),
       doc="Outputs[i] = the rows Ids[i] names of a table cut by rows across the servers "
           "(table_names[j] on endpoints[j], height_sections[j] rows each), fetched from them.")

def_op("checkpoint_notify", inputs=[], outputs=[],
       attrs={"epmap": ("strings", [DEFAULT_ENDPOINT]),
              "dir": ("string", None),
              "lookup_table": ("string", None),
              "trainer_id": ("int", 0)},
       **_RPC,
       doc="Tell each server epmap[i] to save its shard (parameters, optimizer state, "
           "round) into the folder dir/<lookup_table>_<i> (dir/pserver_<i> without a "
           "lookup_table), as Paddle's CheckpointNotify; returns once every server has.")
