"""The kernels of the RPC ops (defined in :mod:`fluid_nb.ops.distributed`, whose docstring
is their contract), attached to the definitions when this package is imported.

Trainer side: ``send``, ``recv``, ``send_barrier``, ``fetch_barrier`` and
``distributed_lookup_table`` call every server they name at the same time through the
process's :func:`~fluid_nb.distributed.client.client` and return once all have answered
(or raise the first typed error). In a sync step the sends, the barrier, the recvs and the
fetch barrier go together (:mod:`.exchange`): the sends leave their encoded values with the
barrier, which makes one call per server and leaves the values got for the recvs; in an
async step the first recv after the sends makes the calls. Their
messages carry the process's trainer id (see :func:`~fluid_nb.distributed.client.client`).
Server side: ``listen_and_serv`` runs
:class:`~fluid_nb.distributed.listen_and_serv.ParameterServer` until its trainers are done.
"""
import os

import numpy as np

from ..errors import InvalidArgument, OutOfRange, expected
from ..framework import registry
from ..tensor.dtypes import to_numpy_dtype
from ..tensor.tensor import LoDTensor, SelectedRows
from ..tensor.transfer import to_host
from . import checkpoint, exchange, messages
from . import send_recv_pb2 as pb
from .client import client
from .listen_and_serv import ParameterServer


def _endpoints(ctx, attr, count, what):
    endpoints = list(ctx.attrs[attr])
    if len(endpoints) != count:
        raise InvalidArgument(expected(ctx.op.type, f"attribute '{attr}'",
                                       f"one endpoint per {what} ({count})", endpoints))
    return endpoints


def _rows_pieces(op, value, sections):
    """``value`` cut by rows into pieces of ``sections`` rows (the pieces a server holds)."""
    array = value.array if isinstance(value, LoDTensor) else None
    if array is None or sum(sections) != array.shape[0]:
        raise InvalidArgument(expected(op, "attribute 'sections'", "row counts summing to "
                                       "X's rows", f"{list(sections)} for "
                                       f"{None if array is None else list(array.shape)}"))
    bounds = np.cumsum([0] + list(sections))
    return [LoDTensor(array[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _on_place(ctx, value):
    """A received value (host arrays) on the kernel's place: a device run gets device
    arrays, as Paddle's recv writes to the op's place."""
    if ctx.xp is np:
        return value
    if isinstance(value, SelectedRows):
        return SelectedRows(value.rows(), value.height(), _on_place(ctx, value.value))
    return LoDTensor(ctx.xp.asarray(value.array), value._lod)


def _send(ctx, xs):
    role = exchange.role_of(ctx.op)
    targets = role[1].targets.get(ctx.op) if role is not None and \
        role[0] == exchange.DEFERRED else None
    if targets is not None:  # whole variables, which the barrier sends
        exchange.defer(ctx.op, role[1], [(ep, name, value) for (ep, name), value
                                         in zip(targets, xs) if _has_value(value)],
                       client(ctx.attrs["trainer_id"]).trainer_id)
        return None
    rpc = client(ctx.attrs["trainer_id"])
    trainer = rpc.trainer_id
    names = list(ctx.attrs["send_varnames"])
    if names:  # one variable, cut by rows, piece j to epmap[j] as names[j]
        epmap = _endpoints(ctx, "epmap", len(names), "name in send_varnames")
        # nothing to send still counts as the op's run (a deferred group's first send
        # starts the group afresh)
        jobs = [] if xs[0] is None else list(zip(
            epmap, names, _rows_pieces("send", xs[0], ctx.attrs["sections"])))
    elif not ctx.attrs["use_send_handler"]:  # a notice (a step counter) to every server
        jobs = [(ep, name, value) for name, value in zip(ctx.input_names("X"), xs)
                if _has_value(value) for ep in ctx.attrs["epmap"]]
    else:
        epmap = _endpoints(ctx, "epmap", len(xs), "input X")
        jobs = [(ep, name, value) for ep, name, value
                in zip(epmap, ctx.input_names("X"), xs) if _has_value(value)]
    if role is not None and role[0] == exchange.DEFERRED:  # the barrier sends them
        exchange.defer(ctx.op, role[1], jobs, trainer)
        return None
    # messages are built here, in the kernel's thread; the calls only move bytes
    rpc.call_all([(ep, "SendVariable", messages.encode(name, value, trainer, f"send to {ep}"))
                  for ep, name, value in jobs])
    return None


def _has_value(value):
    if isinstance(value, SelectedRows):
        return value.value.array is not None
    return isinstance(value, LoDTensor) and value.array is not None


def _recv(ctx, xs):
    if ctx.attrs["do_not_run"]:
        return None
    got = exchange.take(ctx.op)  # the values its group's calls brought, if they did
    if got is None:
        role = exchange.role_of(ctx.op)
        if role is not None and role[0] == exchange.LEADING:  # an async step's calls
            exchange.lead(client(ctx.attrs["trainer_id"]), role[1])
            got = exchange.take(ctx.op)
    if got is not None and not ctx.attrs["recv_varnames"]:
        # its group matched its attributes with its sources: one value per output, in order
        return got if ctx.xp is np else [_on_place(ctx, value) for value in got]
    rpc = client(ctx.attrs["trainer_id"])
    trainer = rpc.trainer_id
    barrier = ctx.attrs["with_barrier"]
    outs = ctx.output_names("Out")
    pieces = list(ctx.attrs["recv_varnames"])
    if pieces:  # Out[0] = the rows of pieces[j] from epmap[j], stacked
        epmap = _endpoints(ctx, "epmap", len(pieces), "name in recv_varnames")
        if got is None:
            got = _get(rpc, zip(epmap, pieces), trainer, barrier)
        return [_on_place(ctx, LoDTensor(np.concatenate([g.array for g in got], axis=0)))]
    names = list(ctx.attrs["varnames"]) or outs
    if len(names) != len(outs):
        raise InvalidArgument(expected("recv", "attribute 'varnames'",
                                       f"one name per output Out ({len(outs)})", names))
    epmap = _endpoints(ctx, "epmap", len(outs), "output Out")
    if got is None:
        got = _get(rpc, zip(epmap, names), trainer, barrier)
    return [_on_place(ctx, value) for value in got]


def _get(rpc, sources, trainer, barrier):
    """The values of ``(endpoint, name)`` sources, asked for at the same time and decoded
    in the kernel's thread."""
    method = "GetVariable" if barrier else "GetVariableNoBarrier"
    suffix = "" if barrier else messages.WITHOUT_BARRIER
    sources = list(sources)
    replies = rpc.call_all([(ep, method, messages.request(name + suffix, trainer), name)
                            for ep, name in sources])
    return [messages.decode(pb.VariableMessage.FromString(reply), f"{method} from {ep}")
            for (ep, _), reply in zip(sources, replies)]


def _send_barrier(ctx, xs):
    rpc = client(ctx.attrs["trainer_id"])
    trainer = rpc.trainer_id
    role = exchange.role_of(ctx.op)
    if role is not None:  # the step's one call per server
        exchange.lead(rpc, role[1])
        return None
    rpc.call_all([(ep, "SendVariable", messages.control(messages.BATCH_BARRIER, trainer))
                  for ep in ctx.attrs["endpoints"]])
    return None


def _fetch_barrier(ctx, xs):
    rpc = client(ctx.attrs["trainer_id"])
    trainer = rpc.trainer_id
    told = exchange.take(ctx.op) or ()  # the endpoints its barrier's calls told already
    rpc.call_all([(ep, "GetVariable", messages.control(messages.FETCH_BARRIER, trainer))
                  for ep in ctx.attrs["endpoints"] if ep not in told])
    return None


def _distributed_lookup_table(ctx, ids_list, w):
    """Each Ids[i]'s rows of a table cut by rows across the servers: one PrefetchVariable
    per (input, block) holding ids, answered with the block's rows for them."""
    attrs = ctx.attrs
    names, endpoints = list(attrs["table_names"]), list(attrs["endpoints"])
    starts = np.cumsum([0] + [int(s) for s in attrs["height_sections"]])
    pad, v2 = attrs["padding_idx"], attrs["lookup_table_version"] == "lookup_table_v2"
    width = w.array.shape[1]
    rpc = client(attrs["trainer_id"])
    trainer = rpc.trainer_id
    jobs, places = [], []
    flats = []
    for i, ids in enumerate(ids_list):
        flat = to_host(ids.array).reshape(-1).astype("int64")
        flats.append(flat)
        wanted = flat != pad if pad != -1 else np.ones(flat.shape, bool)
        bad = wanted & ((flat < 0) | (flat >= starts[-1]))
        if bad.any():
            raise OutOfRange(expected("distributed_lookup_table", f"input Ids[{i}]",
                                      f"ids in [0, {int(starts[-1])}) (the table's rows)",
                                      int(flat[bad][0])))
        block_of = np.searchsorted(starts, flat, side="right") - 1
        for j, (name, ep) in enumerate(zip(names, endpoints)):
            positions = np.nonzero(wanted & (block_of == j))[0]
            if positions.size:
                local = LoDTensor((flat[positions] - starts[j]).reshape(-1, 1))
                message = messages.encode(ctx.input_names("Ids")[i], local, trainer,
                                          f"prefetch from {ep}")
                message.table_name, message.out_varname = name, ctx.output_names("Outputs")[i]
                jobs.append((ep, "PrefetchVariable", message, name))
                places.append((i, positions, ep))
    replies = rpc.call_all(jobs)
    outs = [np.zeros((flat.size, width), dtype=to_numpy_dtype(attrs["dtype"]))
            for flat in flats]
    for (i, positions, ep), reply in zip(places, replies):
        rows = messages.decode(pb.VariableMessage.FromString(reply),
                               f"PrefetchVariable from {ep}").array
        if rows.shape != (positions.size, width):
            raise InvalidArgument(expected(f"distributed_lookup_table: PrefetchVariable from "
                                           f"{ep}", "rows", [positions.size, width],
                                           list(rows.shape)))
        outs[i][positions] = rows
    result = []
    for ids, out in zip(ids_list, outs):
        shape = tuple(ids.array.shape) if v2 else tuple(ids.array.shape[:-1])
        result.append(_on_place(ctx, LoDTensor(out.reshape(shape + (width,)), ids._lod)))
    return result


def _checkpoint_notify(ctx):
    """Every server of ``epmap`` saves its shard into its folder under ``dir``, at once."""
    rpc = client(ctx.attrs["trainer_id"])
    table, folder = ctx.attrs.get("lookup_table") or "", ctx.attrs.get("dir")
    if not folder:
        raise InvalidArgument(expected("checkpoint_notify", "attribute 'dir'",
                                       "the folder the servers save into", repr(folder)))
    calls = []
    for i, ep in enumerate(ctx.attrs["epmap"]):
        message = pb.VariableMessage(varname=checkpoint.NOTIFY_NAME,
                                     trainer_id=rpc.trainer_id)
        message.out_varname = os.path.join(folder, f"{table}_{i}" if table else f"pserver_{i}")
        calls.append((ep, "CheckpointNotify", message))
    rpc.call_all(calls)
    return None


def _listen_and_serv(ctx, xs):
    server = ParameterServer(ctx)
    try:
        server.serve()
    finally:  # the received variables go with the server's scope
        kids = ctx.scope.kids
        kids[:] = [kid for kid in kids if kid is not server.scope]
    return None


def attach():
    registry.attach_kernel("send", _send)
    registry.attach_kernel("recv", _recv)
    registry.attach_kernel("send_barrier", _send_barrier)
    registry.attach_kernel("fetch_barrier", _fetch_barrier)
    registry.attach_kernel("listen_and_serv", _listen_and_serv)
    registry.attach_kernel("distributed_lookup_table", _distributed_lookup_table)
    registry.attach_kernel("checkpoint_notify", _checkpoint_notify)
