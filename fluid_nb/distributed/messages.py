"""A variable as a ``VariableMessage`` and back: what travels between trainers and servers.

A LoDTensor travels as its data type (framework.proto's ``VarType.Type`` number), dims, LoD
(``lod_level`` levels of offsets) and elements (``serialized``: C order, little-endian); a
SelectedRows as the same for its value plus ``rows`` (int64 little-endian) and
``slr_height``. Control messages are messages whose ``varname`` is one of Paddle's reserved
names (``BATCH_BARRIER@RECV`` ...) and carry nothing else.

:func:`decode` is the one door a received value comes in by. It checks everything a message
claims against what it holds before it makes anything (a known type and data type, at most
MAX_RANK dims, each in [0, MAX_BYTES], elements of at most MAX_BYTES bytes together, a byte
count equal to dims times the element size, a valid LoD ending at the rows, rows inside a
height that is not negative) and refuses with InvalidArgument naming the variable and
``where``, so a malformed message, however large the sizes it declares, never becomes a
half-made value nor an error of NumPy's.

A ``VariableBatch`` is a trainer's exchange of one step with one server
(``SendAndGetVariables``): the variables it sends, its send barrier, the names it gets and
its fetch barrier, taken in that order; the reply carries the values got, in the order
asked. Both are written in protobuf's wire form around the messages' pieces
(:func:`batch_request`, :func:`batch_reply`: a value's elements are copied once, into the
batch's bytes), and read by the generated class (:func:`decode_batch`).
"""
import math

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import InvalidArgument, expected
from ..tensor.dtypes import DATA_TYPES, VarType, convert_dtype, to_numpy_dtype
from ..tensor.tensor import LoDTensor, SelectedRows, check_lod
from ..tensor.transfer import to_host
from . import send_recv_pb2 as pb

#: a trainer has sent all its gradients of this step (SendVariable)
BATCH_BARRIER = "BATCH_BARRIER@RECV"
#: a trainer has received all its parameters of this step (GetVariable)
FETCH_BARRIER = "FETCH_BARRIER@RECV"
#: a trainer is done: the servers stop waiting for it (SendVariable, ``exe.close()``)
COMPLETE = "COMPLETE@RECV"
#: suffix of a GetVariableNoBarrier request's varname
WITHOUT_BARRIER = "@WITHOUT_BARRIER@RECV"
CONTROL_NAMES = frozenset({BATCH_BARRIER, FETCH_BARRIER, COMPLETE})
#: the most bytes a message's elements may take: protobuf and gRPC carry less than 2 GiB in
#: one message, so a message declaring more is lying about its size
MAX_BYTES = 2 ** 31 - 1
#: the most dims a tensor may have (NumPy 1's limit, so that both NumPy 1 and 2 can hold it)
MAX_RANK = 32


def control(name, trainer_id):
    """The control message ``name`` (one of CONTROL_NAMES) from trainer ``trainer_id``."""
    return pb.VariableMessage(varname=name, trainer_id=trainer_id)


def request(name, trainer_id):
    """A GetVariable request: the variable's name only."""
    return pb.VariableMessage(varname=name, trainer_id=trainer_id)


def encode(name, value, trainer_id=0, where="send"):
    """The VariableMessage carrying ``value`` (a LoDTensor, SelectedRows or array) as
    variable ``name``: :func:`serialize`'s bytes, parsed."""
    return pb.VariableMessage.FromString(serialize(name, value, trainer_id, where))


def serialize(name, value, trainer_id=0, where="send"):
    """The bytes of the VariableMessage carrying ``value`` (a LoDTensor, SelectedRows or
    array) as variable ``name``, written field by field in protobuf's wire form, as
    ``SerializeToString`` writes them (field-number order, proto3 defaults left out,
    ``dims`` and ``lod_data`` packed), with the elements copied once (into the result)."""
    return b"".join(pieces(name, value, trainer_id, where))


def pieces(name, value, trainer_id=0, where="send"):
    """:func:`serialize`'s bytes as the list of pieces they join: the elements are a
    one-dimensional uint8 view of the value's own array (or of its little-endian, C-order
    copy), so a batch that carries the message copies them once, into the batch. The
    pieces see later writes to that array: they are for a message written now."""
    kind, height, rows, lod = pb.LOD_TENSOR, 0, b"", ()
    if isinstance(value, LoDTensor):
        tensor, lod = value, value._lod
    elif isinstance(value, SelectedRows):
        kind, height = pb.SELECTED_ROWS, value.height()
        rows = np.asarray(value.rows(), dtype="<i8").tobytes()
        tensor = value.value
    elif isinstance(value, np.ndarray):
        tensor = LoDTensor(value)
    else:
        raise InvalidArgument(expected(where, f"variable '{name}'", "a LoDTensor or "
                                       "SelectedRows with a value", type(value).__name__))
    array = tensor.array
    if array is None:
        raise InvalidArgument(expected(where, f"variable '{name}'", "an initialised tensor",
                                       "a tensor with no data"))
    if array.__class__ is not np.ndarray:
        array = to_host(array)  # a device array's bytes come to the host: one copy
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    # fields 1-4 (varname, type, data_type, dims) are the same every step for a variable
    key = (name, kind, array.dtype, array.shape)
    head = _HEADS.get(key)
    if head is None:
        head = _head(name, kind, array)
        if len(_HEADS) >= _MAX_HEADS:
            _HEADS.clear()
        _HEADS[key] = head
    parts = [head]
    if lod:
        parts += [b"\x28", _varint(len(lod))]  # 5: lod_level
        for level in lod:  # 6: lod, each a LodData (1: lod_data)
            inner = b"".join(_packed(b"\x0a", level)) if len(level) else b""
            parts += [b"\x32", _varint(len(inner)), inner]
    if height:
        parts += [b"\x38", _varint(height)]  # 7: slr_height
    size = array.nbytes
    if size:  # 8: serialized (the array's own buffer; join copies it once)
        parts += [b"\x42", _varint(size), array.reshape(-1).view(np.uint8)]
    if rows:
        parts += [b"\x4a", _varint(len(rows)), rows]  # 9: rows
    if trainer_id:
        parts += [b"\x60", _varint(trainer_id)]  # 12: trainer_id
    return parts


def _head(name, kind, array):
    """Fields 1-4 of a VariableMessage: varname, type, data_type, dims."""
    data_type = int(convert_dtype(array.dtype))
    text = name.encode("utf-8")
    parts = [b"\x0a", _varint(len(text)), text]
    if kind:
        parts += [b"\x10", _varint(kind)]
    if data_type:
        parts += [b"\x18", _varint(data_type)]
    if array.ndim:
        parts += _packed(b"\x22", array.shape)
    return b"".join(parts)


#: (name, type, dtype, shape) -> the first fields of its messages (see serialize); cleared
#: when full, so a process naming ever new variables keeps at most this many
_HEADS = {}
_MAX_HEADS = 1024


def _packed(tag, numbers):
    """A packed repeated int64 field: its tag, its length, the numbers' varints."""
    body = b"".join([_varint(int(n)) for n in numbers])
    return [tag, _varint(len(body)), body]


#: a data type number -> (its elements' little-endian dtype, the native dtype a decoded
#: array is cast to, or None where that is the same), for the numbers a message may carry
_ELEMENTS = {int(t): (to_numpy_dtype(t).newbyteorder("<"),
                      None if to_numpy_dtype(t) == to_numpy_dtype(t).newbyteorder("<")
                      else to_numpy_dtype(t))
             for t in DATA_TYPES - {VarType.BF16, VarType.FP8_E4M3FN, VarType.FP8_E5M2}}


def decode(message, where):
    """The value a VariableMessage carries (LoDTensor or SelectedRows over NumPy arrays),
    checked whole before anything is made."""
    name = message.varname

    def refuse(what, want, got):
        raise InvalidArgument(expected(f"{where}: variable '{name}'", what, want, got))

    if not name:
        raise InvalidArgument(expected(where, "message varname", "a variable name", "''"))
    kind = message.type
    if kind != pb.LOD_TENSOR and kind != pb.SELECTED_ROWS:
        refuse("type", "LOD_TENSOR (0) or SELECTED_ROWS (1)", kind)
    elements = _ELEMENTS.get(message.data_type)
    if elements is None:
        refuse("data_type", "a data type NumPy holds (framework.proto's VarType.Type)",
               message.data_type)
    wire, native = elements
    dims = list(message.dims)
    size = _checked_size(dims, wire.itemsize, refuse)
    data = message.serialized
    if len(data) != size:
        refuse("serialized bytes", f"{size} ({dims} of {wire.name})", len(data))
    array = np.frombuffer(data, dtype=wire).reshape(dims)
    array = array.copy() if native is None else array.astype(native)
    if kind == pb.SELECTED_ROWS:
        return _selected_rows(message, array, refuse)
    lod = [list(level.lod_data) for level in message.lod] if len(message.lod) else []
    if message.lod_level != len(lod):
        refuse("lod_level", f"the number of LoD levels it carries ({len(lod)})",
               message.lod_level)
    if lod:
        if not dims:
            refuse("dims", "a tensor with rows for its LoD", dims)
        try:
            check_lod(lod, dims[0], where=f"{where}: variable '{name}'")
        except InvalidArgument as exc:
            raise InvalidArgument(str(exc)) from None
    return LoDTensor(array, lod)


def _checked_size(dims, itemsize, refuse):
    """The bytes ``dims`` of ``itemsize``-byte elements take, computed in Python integers
    (NumPy's int64 product wraps: [2**32, 2**32] would claim 0 elements)."""
    if len(dims) > MAX_RANK:
        refuse("dims", f"at most {MAX_RANK} dims", f"{len(dims)} dims")
    if dims and (min(dims) < 0 or max(dims) > MAX_BYTES):
        refuse("dims", f"sizes in [0, {MAX_BYTES}]", dims)
    size = itemsize * math.prod(dims)
    if size > MAX_BYTES:
        refuse("dims", f"elements of at most {MAX_BYTES} bytes (what one message carries)",
               f"{dims}: {size} bytes")
    return size


def _selected_rows(message, array, refuse):
    if len(message.rows) % 8:
        refuse("rows", "int64 row numbers (a multiple of 8 bytes)", f"{len(message.rows)} bytes")
    rows = np.frombuffer(message.rows, dtype="<i8")
    if not array.ndim or rows.shape[0] != array.shape[0]:
        refuse("rows", f"one row number per value row ({array.shape[:1]})", rows.shape[0])
    height = message.slr_height
    if height < 0:
        refuse("slr_height", "a height >= 0", height)
    if rows.size and (rows.min() < 0 or rows.max() >= height):
        refuse("rows", f"row numbers in [0, slr_height={height})",
               f"{int(rows.min())}..{int(rows.max())}")
    return SelectedRows(rows.tolist(), height, LoDTensor(array))


def batch_names(batch):
    """What a VariableBatch request is about, in the order the server takes it: its
    variables' names, BATCH_BARRIER@RECV, the names it gets, FETCH_BARRIER@RECV (the
    barriers when set)."""
    names = [variable.varname for variable in batch.variables]
    if batch.send_barrier:
        names.append(BATCH_BARRIER)
    names.extend(batch.get_varnames)
    if batch.fetch_barrier:
        names.append(FETCH_BARRIER)
    return names


# VariableBatch's fields on the wire: a tag is (field number << 3) | wire type (0: varint,
# 2: length-delimited)
_TRAINER_ID, _SEND_BARRIER, _FETCH_BARRIER = bytes([1 << 3]), bytes([3 << 3]), bytes([5 << 3])
_VARIABLES, _GET_VARNAMES = bytes([(2 << 3) | 2]), bytes([(4 << 3) | 2])


def _varint(n):
    """``n`` as a protobuf varint: 7 bits a byte, low first, high bit = more (a negative
    int64 as its 64-bit two's complement, ten bytes)."""
    if 0 <= n < 0x80:
        return _SMALL_VARINTS[n]
    if 0 < n < 0x200000:  # two or three bytes: a tensor's byte count, a dim
        return bytes((n & 0x7F | 0x80, n >> 7)) if n < 0x4000 else \
            bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL_VARINTS = [bytes([n]) for n in range(0x80)]


def _delimited(tag, fields):
    """Length-delimited fields ``tag``: each bytes, or a list of pieces (see :func:`pieces`)
    written one after the other."""
    parts = []
    for field in fields:
        if field.__class__ is list:
            parts += [tag, _varint(sum(map(len, field)))]
            parts += field
        else:
            parts += [tag, _varint(len(field)), field]
    return parts


def batch_request(trainer_id, serialized, send_barrier, get_names, fetch_barrier):
    """The bytes of the VariableBatch request of trainer ``trainer_id`` (>= 0) sending the
    VariableMessages ``serialized`` (each bytes, or :func:`pieces`), then (flags) its send
    barrier, getting ``get_names``, then its fetch barrier: what ``pb.VariableBatch(...)``
    serializes to, the values' elements copied once, into it."""
    parts = [_TRAINER_ID, _varint(trainer_id)] if trainer_id else []
    parts += _delimited(_VARIABLES, serialized)
    if send_barrier:
        parts += [_SEND_BARRIER, b"\x01"]
    parts += _delimited(_GET_VARNAMES, [name.encode("utf-8") for name in get_names])
    if fetch_barrier:
        parts += [_FETCH_BARRIER, b"\x01"]
    return b"".join(parts)


def batch_reply(serialized):
    """The bytes of a VariableBatch whose ``variables`` are the VariableMessages
    ``serialized`` (each bytes, or :func:`pieces`), in order."""
    return b"".join(_delimited(_VARIABLES, serialized))


def decode_batch(payload, names, where):
    """The values a ``SendAndGetVariables`` reply (bytes) carries, checked to be the
    variables ``names`` in that order, each decoded whole (:func:`decode`)."""
    try:
        reply = pb.VariableBatch.FromString(payload)
    except DecodeError as exc:
        raise InvalidArgument(expected(where, "reply", "a VariableBatch",
                                       f"{len(payload)} bytes that do not parse ({exc})"))
    got = [variable.varname for variable in reply.variables]
    if got != list(names):
        raise InvalidArgument(expected(where, "reply variables", f"{list(names)} (the names "
                                       "asked, in order)", got))
    return [decode(variable, where) for variable in reply.variables]


def nbytes(message):
    """The bytes a message takes on the wire (what the benchmark counts)."""
    return message.ByteSize()
