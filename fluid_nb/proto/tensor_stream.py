"""Paddle's LoDTensor stream layout, the format of parameter files.

One tensor, little-endian::

    uint32  version (0)
    uint64  number of LoD levels
    per level:  uint64 byte size, then that many bytes of uint64 offsets
    uint32  tensor version (0)
    int32   byte size of the TensorDesc
    bytes   VarType.TensorDesc (data_type, dims)
    bytes   the data, C order, numel * element size

A combined file (``*.pdiparams``, ``__params__``) is such records back to back. Reading
never executes anything from the file; a truncated or corrupt record raises InvalidArgument
naming the file and the byte offset.
"""
import struct

import numpy as np

from ..errors import InvalidArgument
from ..framework.dtypes import VarType, dtype_size, to_numpy_dtype
from . import framework_pb2 as pb


def write_lod_tensor(out, array, lod=()):
    """Append one tensor record for ``array`` (NumPy) with ``lod`` to the binary file ``out``."""
    array = np.ascontiguousarray(array)
    out.write(struct.pack("<I", 0))
    out.write(struct.pack("<Q", len(lod)))
    for level in lod:
        offsets = np.asarray(level, dtype="<u8")
        out.write(struct.pack("<Q", offsets.nbytes))
        out.write(offsets.tobytes())
    out.write(struct.pack("<I", 0))
    desc = pb.VarType.TensorDesc()
    from ..framework.dtypes import convert_dtype
    desc.data_type = int(convert_dtype(array.dtype))
    desc.dims.extend(array.shape)
    raw = desc.SerializeToString()
    out.write(struct.pack("<i", len(raw)))
    out.write(raw)
    out.write(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())


class _Reader:
    def __init__(self, data, where):
        self.data = memoryview(data)
        self.pos = 0
        self.where = where

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.data):
            raise InvalidArgument(f"{self.where}: {n} bytes of {what} expected at offset "
                                  f"{self.pos}, but the file has {len(self.data) - self.pos} "
                                  f"left (truncated or not a Paddle tensor file)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    @property
    def done(self):
        return self.pos >= len(self.data)


def read_lod_tensor(reader):
    """Read one record; returns (array, lod)."""
    start = reader.pos
    version = reader.unpack("<I", "LoDTensor version")
    if version != 0:
        raise InvalidArgument(f"{reader.where}: LoDTensor version 0 expected at offset {start}, "
                              f"but received {version}")
    levels = reader.unpack("<Q", "LoD level count")
    if levels > 16:
        raise InvalidArgument(f"{reader.where}: a LoD level count below 16 expected at offset "
                              f"{start + 4}, but received {levels}")
    lod = []
    for _ in range(levels):
        size = reader.unpack("<Q", "LoD level size")
        if size % 8:
            raise InvalidArgument(f"{reader.where}: a LoD level size in whole uint64s expected, "
                                  f"but received {size} bytes")
        lod.append(np.frombuffer(reader.take(size, "LoD offsets"), dtype="<u8").astype(int).tolist())
    tensor_version = reader.unpack("<I", "tensor version")
    if tensor_version != 0:
        raise InvalidArgument(f"{reader.where}: tensor version 0 expected, but received "
                              f"{tensor_version}")
    desc_size = reader.unpack("<i", "TensorDesc size")
    desc = pb.VarType.TensorDesc()
    try:
        desc.ParseFromString(bytes(reader.take(desc_size, "TensorDesc")))
    except Exception as exc:
        raise InvalidArgument(f"{reader.where}: a TensorDesc expected at offset {reader.pos}, "
                              f"but it does not parse ({exc})") from None
    dtype = VarType(desc.data_type)
    shape = tuple(desc.dims)
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"{reader.where}: non-negative dims expected, but received "
                              f"{list(shape)}")
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    raw = reader.take(numel * dtype_size(dtype), f"data of a {list(shape)} {dtype.name} tensor")
    array = np.frombuffer(raw, dtype=to_numpy_dtype(dtype).newbyteorder("<")).reshape(shape)
    return array.astype(array.dtype.newbyteorder("="), copy=True), lod


def read_lod_tensors(data, where):
    """Every record in ``data`` (a combined file), in order."""
    reader = _Reader(data, where)
    records = []
    while not reader.done:
        records.append(read_lod_tensor(reader))
    return records


def read_one(data, where):
    reader = _Reader(data, where)
    record = read_lod_tensor(reader)
    if not reader.done:
        raise InvalidArgument(f"{where}: one tensor expected, but {len(reader.data) - reader.pos} "
                              f"bytes follow it")
    return record
