"""Malformed requests to a parameter server, each as the bytes a raw gRPC client sends, with
the status the server must answer it with. Built from one variable the server receives
(``name``, float32 of ``shape``), so that only the flaw named by the label is wrong."""
import random

import grpc
import numpy as np

from fluid_nb.distributed import send_recv_pb2 as pb

INVALID, MISSING = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND


def _tensor(name, shape, **fields):
    """A float32 LoDTensor message for ``name``; ``fields`` override what it claims."""
    data = np.ones(shape, "float32").tobytes()
    message = pb.VariableMessage(varname=name, type=pb.LOD_TENSOR, data_type=5,
                                 dims=list(shape), serialized=data)
    for field, value in fields.items():
        if field in ("dims", "lod"):
            message.ClearField(field)
            if field == "dims":
                message.dims.extend(value)
            else:
                for level in value:
                    message.lod.add().lod_data.extend(level)
        else:
            setattr(message, field, value)
    return message.SerializeToString()


def _batch(*variables, trainer_id=0, **fields):
    """A SendAndGetVariables request carrying the serialized ``variables``."""
    batch = pb.VariableBatch(trainer_id=trainer_id, **fields)
    for variable in variables:
        batch.variables.add().ParseFromString(variable)
    return batch.SerializeToString()


def malformed_batches(name, shape, fanin=2, sync=True):
    """[(label, method, payload bytes, status code)]: batches that each carry one flaw, most
    next to a good variable, which the refusal must leave unapplied."""
    good = _tensor(name, shape)
    batch = pb.BATCH_METHOD
    flawed = [
        ("batch-protobuf-garbage", batch, b"\xff\xff\xff\xff", INVALID),
        ("batch-variable-bytes-short", batch, _batch(good, _tensor(
            name, shape, serialized=np.ones(shape, "float32").tobytes()[:-4])), INVALID),
        ("batch-variable-name-unknown", batch,
         _batch(good, _tensor("no_such_variable@GRAD", shape)), MISSING),
        ("batch-get-name-unknown", batch, _batch(good, get_varnames=["no_such_variable"]),
         MISSING),
        ("batch-variable-named-as-a-barrier", batch,
         _batch(good, _tensor("BATCH_BARRIER@RECV", shape)), INVALID),
        ("batch-get-named-as-a-barrier", batch,
         _batch(good, get_varnames=["FETCH_BARRIER@RECV"]), INVALID),
        ("batch-trainer-id-out-of-range", batch,
         _batch(_tensor(name, shape, trainer_id=fanin), trainer_id=fanin), INVALID),
        ("batch-variable-of-another-trainer", batch,
         _batch(_tensor(name, shape, trainer_id=1), trainer_id=0), INVALID),
    ]
    if sync:  # a round could never turn before such a batch's gets
        flawed.append(("batch-sends-and-gets-without-the-send-barrier", batch,
                       _batch(good, get_varnames=[name], fetch_barrier=True), INVALID))
    return flawed


def malformed_requests(name, shape, fanin=2, sync=True):
    """[(label, method, payload bytes, status code)]: every class of bad message once
    (``sync``: as a sync server refuses them)."""
    rows = shape[0]
    good = _tensor(name, shape)
    return malformed_batches(name, shape, fanin, sync) + [
        # sizes whose int64 product wraps around (to 0 elements: no bytes would match)
        ("dims-overflow-2^32x2^32", "SendVariable",
         _tensor(name, shape, dims=[2 ** 32, 2 ** 32], serialized=b""), INVALID),
        ("dims-overflow-2^62x4", "SendVariable",
         _tensor(name, shape, dims=[2 ** 62, 4], serialized=b""), INVALID),
        ("dims-negative", "SendVariable", _tensor(name, shape, dims=[-rows, 1]), INVALID),
        ("dims-huge-declared-size", "SendVariable",
         _tensor(name, shape, dims=[2 ** 20, 2 ** 20], serialized=b""), INVALID),
        ("dims-too-many", "SendVariable", _tensor(name, shape, dims=[1] * 40), INVALID),
        ("bytes-short", "SendVariable",
         _tensor(name, shape, serialized=np.ones(shape, "float32").tobytes()[:-4]), INVALID),
        ("bytes-long", "SendVariable",
         _tensor(name, shape, serialized=np.ones(shape, "float32").tobytes() + b"\0" * 4),
         INVALID),
        ("dims-other-than-declared", "SendVariable",
         _tensor(name, shape, dims=list(reversed(shape)) + [1]), INVALID),
        ("dtype-unknown-99", "SendVariable", _tensor(name, shape, data_type=99), INVALID),
        ("dtype-not-an-element-type", "SendVariable", _tensor(name, shape, data_type=7),
         INVALID),
        ("dtype-other-than-declared", "SendVariable",
         _tensor(name, shape, data_type=6,
                 serialized=np.ones(shape, "float64").tobytes()), INVALID),
        ("type-nccl-id", "SendVariable", _tensor(name, shape, type=2), INVALID),
        ("name-unknown", "SendVariable", _tensor("no_such_variable@GRAD", shape), MISSING),
        ("name-empty-get", "GetVariable",
         pb.VariableMessage(varname="", trainer_id=0).SerializeToString(), MISSING),
        ("name-unknown-get", "GetVariable",
         pb.VariableMessage(varname="no_such_variable").SerializeToString(), MISSING),
        ("lod-decreasing", "SendVariable",
         _tensor(name, shape, lod=[[0, rows + 1, 1]], lod_level=1), INVALID),
        ("lod-past-the-rows", "SendVariable",
         _tensor(name, shape, lod=[[0, rows + 5]], lod_level=1), INVALID),
        ("lod-level-count-wrong", "SendVariable",
         _tensor(name, shape, lod=[[0, rows]], lod_level=3), INVALID),
        ("trainer-id-out-of-range", "SendVariable", _tensor(name, shape, trainer_id=fanin),
         INVALID),
        ("trainer-id-negative", "SendVariable", _tensor(name, shape, trainer_id=-1), INVALID),
        ("protobuf-garbage", "SendVariable", b"\xff\xff\xff\xff", INVALID),
        ("protobuf-truncated", "SendVariable", good[:-3], INVALID),
        ("protobuf-random", "SendVariable",
         bytes(random.Random(7).randrange(256) | 0x80 for _ in range(64)), INVALID),
        ("method-monomer-get", "GetMonomerVariable", good, grpc.StatusCode.UNIMPLEMENTED),
        # a checkpoint notify names SAVE@CHECKPOINTNOTIFY, not a variable
        ("checkpoint-notify-naming-a-variable", "CheckpointNotify", good, INVALID),
        # a folder no file system takes (a NUL byte): refused, not the server's failure
        ("checkpoint-notify-folder-with-nul", "CheckpointNotify",
         pb.VariableMessage(varname="SAVE@CHECKPOINTNOTIFY", trainer_id=0,
                            out_varname="ckpt\x00x").SerializeToString(), INVALID),
    ]


def send_raw(channel, method, payload, timeout=5.0):
    """The status code and details a server answers ``payload`` with (OK: None)."""
    call = channel.unary_unary(f"/{pb.SERVICE}/{method}")
    try:
        call(payload, timeout=timeout)
    except grpc.RpcError as error:
        return error.code(), error.details() or ""
    return None, ""
