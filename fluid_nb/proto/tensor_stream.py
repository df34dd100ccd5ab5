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

from ..errors import InvalidArgument, expected
from ..tensor.dtypes import VarType, dtype_size, to_numpy_dtype
from .. import c_parts
from . import framework_pb2 as pb
from . import wire

_records = c_parts.load("fluid_nb.proto._program_records",
                        "the program file reader and writer")


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
    from ..tensor.dtypes import convert_dtype
    desc.data_type = int(convert_dtype(array.dtype))
    desc.dims.extend(array.shape)
    raw = desc.SerializeToString()
    out.write(struct.pack("<i", len(raw)))
    out.write(raw)
    out.write(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())


class _Reader:
    """Reads a parameter file from memory; every refusal names the file and a byte offset."""

    def __init__(self, data, where):
        self.data = memoryview(data)
        self.pos = 0
        self.where = where

    def fail(self, offset, what, want, got):
        raise InvalidArgument(expected(f"{self.where}: byte {offset}", what, want, got))

    def take(self, n, what):
        left = len(self.data) - self.pos
        if n > left:
            self.fail(self.pos, what, f"{n} bytes", f"{left} left (the file is truncated or "
                      f"not a Paddle tensor file)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    @property
    def done(self):
        return self.pos >= len(self.data)


# Paddle's own limit is the tensor's rank; no real file nests sequences this deep
_MAX_LOD_LEVELS = 16
# BF16 and FP8 parameters exist in Paddle, but no NumPy dtype holds them here
_ELEMENT_TYPES = frozenset(t for t in VarType if t <= VarType.FP64 or t in (
    VarType.UINT8, VarType.INT8, VarType.COMPLEX64, VarType.COMPLEX128))


def read_lod_tensor(reader, copy=True):
    """Read one record; returns (array, lod). The one validation point for the stream:
    nothing is built from a record before all of its header has been checked. ``copy``
    false: the array may be a read-only view of the file's bytes (for a caller that copies
    it anyway)."""
    at = reader.pos
    version = reader.unpack("<I", "LoDTensor version")
    if version != 0:
        reader.fail(at, "LoDTensor version", "0", version)
    at = reader.pos
    levels = reader.unpack("<Q", "LoD level count")
    if levels > _MAX_LOD_LEVELS:
        reader.fail(at, "LoD level count", f"at most {_MAX_LOD_LEVELS}", levels)
    lod, lod_at = [], []
    for level in range(levels):
        at = reader.pos
        size = reader.unpack("<Q", f"LoD level {level} size")
        if size % 8 or size == 0:
            reader.fail(at, f"LoD level {level} size", "a positive multiple of 8 bytes (uint64 "
                        "offsets)", size)
        lod_at.append(reader.pos)
        raw = reader.take(size, f"LoD level {level} offsets")
        lod.append([int(x) for x in np.frombuffer(raw, dtype="<u8")])
    at = reader.pos
    tensor_version = reader.unpack("<I", "tensor version")
    if tensor_version != 0:
        reader.fail(at, "tensor version", "0", tensor_version)
    at = reader.pos
    desc_size = reader.unpack("<i", "TensorDesc size")
    if desc_size < 0:
        reader.fail(at, "TensorDesc size", "a non-negative byte count", desc_size)
    desc_at = reader.pos
    raw = bytes(reader.take(desc_size, "TensorDesc"))
    # a file holds hundreds of these: read in C, and checked by the wire walk only when the
    # C reader leaves it or the header is not one to read (which the walk then words)
    desc = _records.read_tensor_desc(raw)
    if desc is None or desc[0] not in _ELEMENT_TYPES or any(d < 0 for d in desc[1]):
        desc = _checked_desc(reader, raw, desc_at)
    data_type, shape = desc
    numel = 1
    for d in shape:  # Python ints: a product past int64 is just a size no file holds
        numel *= d
    dtype = VarType(data_type)
    _check_lod(reader, lod, lod_at, shape)
    raw = reader.take(numel * dtype_size(dtype), f"data of a {list(shape)} {dtype.name} tensor")
    array = np.frombuffer(raw, dtype=to_numpy_dtype(dtype).newbyteorder("<")).reshape(shape)
    return array.astype(array.dtype.newbyteorder("="), copy=copy), lod


def _checked_desc(reader, raw, desc_at):
    """The ``(data_type, shape)`` of TensorDesc bytes ``raw`` (at ``desc_at``), walked and
    checked, or the refusal naming its byte offset."""
    desc_where = f"{reader.where}: TensorDesc at byte {desc_at}"
    node = wire.check_message(raw, pb.VarType.TensorDesc.DESCRIPTOR, desc_where)
    desc = pb.VarType.TensorDesc.FromString(raw)
    if desc.data_type not in _ELEMENT_TYPES:
        reader.fail(desc_at + node.offset("data_type"), "TensorDesc data_type",
                    "an element type NumPy holds (BOOL, INT*, FP16/32/64, UINT8, INT8, "
                    "COMPLEX*)", VarType(desc.data_type).name)
    shape = tuple(desc.dims)
    if any(d < 0 for d in shape):
        reader.fail(desc_at + node.offset("dims"), "TensorDesc dims",
                    "non-negative sizes", list(shape))
    return desc.data_type, shape


def _check_lod(reader, lod, lod_at, shape):
    """Offsets of each level start at 0 and never decrease; a level ends at the number of
    sequences of the level below it, the last one at the tensor's row count."""
    for level, offsets in enumerate(lod):
        what = f"LoD level {level}"
        if offsets[0] != 0:
            reader.fail(lod_at[level], what, "offsets starting at 0", offsets[:8])
        if any(b < a for a, b in zip(offsets, offsets[1:])):
            reader.fail(lod_at[level], what, "non-decreasing offsets", offsets[:8])
        end = len(lod[level + 1]) - 1 if level + 1 < len(lod) else (shape[0] if shape else 1)
        if offsets[-1] != end:
            below = (f"the {end} sequences of level {level + 1}" if level + 1 < len(lod)
                     else f"the tensor's {end} rows")
            reader.fail(lod_at[level], what, f"offsets ending at {end} ({below})",
                        f"an end at {offsets[-1]}")


def read_lod_tensors(data, where, copy=True):
    """Every record in ``data`` (a combined file), in order (``copy``: see
    :func:`read_lod_tensor`)."""
    reader = _Reader(data, where)
    records = []
    while not reader.done:
        records.append(read_lod_tensor(reader, copy))
    return records


def read_one(data, where, copy=True):
    """The one record of a per-variable file; trailing bytes are refused (``copy``: see
    :func:`read_lod_tensor`)."""
    reader = _Reader(data, where)
    record = read_lod_tensor(reader, copy)
    if not reader.done:
        reader.fail(reader.pos, "end of file", "the end after one tensor",
                    f"{len(reader.data) - reader.pos} more bytes")
    return record
