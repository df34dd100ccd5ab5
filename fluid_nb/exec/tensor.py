"""Runtime values: LoDTensor, LoDTensorArray, SelectedRows.

LoD (level of detail) is offset based, as in Fluid: ``[[0, 5, 8, 10, 14]]`` says rows 0-4
are sequence 0, rows 5-7 sequence 1, and so on. With several levels each level's offsets
index the next level's sequences, and the last level's offsets index rows:
``[[0, 2, 4], [0, 5, 8, 10, 14]]`` groups those four sequences into two paragraphs.

Invariants checked by :func:`check_lod`: every level starts at 0 and never decreases; the
last offset of a level equals the number of sequences of the level below it; the last
offset of the last level equals the number of rows.
"""
import numpy as np

from ..errors import InvalidArgument, PreconditionNotMet
from ..framework.dtypes import convert_dtype, to_numpy_dtype
from .place import CPUPlace, place_of


def check_lod(lod, rows=None, where="LoDTensor"):
    """Raise InvalidArgument unless ``lod`` is a valid offset LoD (for ``rows`` rows)."""
    for level, offsets in enumerate(lod):
        if len(offsets) < 1 or offsets[0] != 0:
            raise InvalidArgument(f"{where}: LoD level {level} expected to start at 0, but "
                                  f"received {list(offsets)}")
        for a, b in zip(offsets, offsets[1:]):
            if b < a:
                raise InvalidArgument(f"{where}: LoD level {level} expected non-decreasing "
                                      f"offsets, but received {list(offsets)}")
        if level + 1 < len(lod) and offsets[-1] != len(lod[level + 1]) - 1:
            raise InvalidArgument(f"{where}: LoD level {level} expected to end at "
                                  f"{len(lod[level + 1]) - 1} (the number of sequences in "
                                  f"level {level + 1}), but received {list(offsets)}")
    if lod and rows is not None and lod[-1][-1] != rows:
        raise InvalidArgument(f"{where}: last LoD level expected to end at {rows} (the number "
                              f"of rows), but received {list(lod[-1])}")


def lengths_to_offsets(lengths):
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + int(n))
    return offsets


def lod_from_row_offsets(row_offsets):
    """Paddle's LoD from levels written as row offsets, the design documents' notation.

    The design documents draw every level in rows: paragraphs ``[0, 5, 8, 10, 14]`` over
    sentences ``[0, 2, 3, 5, 7, 8, 10, 13, 14]``. Paddle stores each level but the last in
    units of the next level's sequences: ``[[0, 3, 5, 6, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]``.
    Every boundary of a level must also be a boundary of the level below.
    """
    levels = [list(level) for level in row_offsets]
    lod = [levels[-1]] if levels else []
    for depth in range(len(levels) - 2, -1, -1):
        below = {row: index for index, row in enumerate(levels[depth + 1])}
        missing = [row for row in levels[depth] if row not in below]
        if missing:
            raise InvalidArgument(f"lod_from_row_offsets: row offsets of level {depth} "
                                  f"expected to be boundaries of level {depth + 1} too, but "
                                  f"rows {missing} are not")
        lod.insert(0, [below[row] for row in levels[depth]])
    check_lod(lod, where="lod_from_row_offsets")
    return lod


def offsets_to_lengths(offsets):
    return [b - a for a, b in zip(offsets, offsets[1:])]


class LoDTensor:
    """A dense array (NumPy or CuPy) with an offset LoD.

    ``np.array(t)`` gives the data; ``t.lod()`` the offsets; ``t.shape()`` the dims.
    """

    __slots__ = ("array", "_lod")

    def __init__(self, array=None, lod=()):
        # ``_lod``: offset levels; never changed in place (``set_lod`` replaces it), so
        # tensors share LoD lists, and no LoD is one shared empty tuple
        self.array = array
        self._lod = lod if lod is not None else ()

    # --- Fluid surface ------------------------------------------------------------------
    def set(self, array, place=None):
        """Copy ``array`` in (onto ``place``; CPU when not given)."""
        place = place if place is not None else CPUPlace()
        xp = place.xp
        if xp is np:
            if not isinstance(array, np.ndarray) and hasattr(array, "get"):
                array = array.get()
            self.array = np.array(array, copy=True)
        else:
            self.array = xp.array(array)

    def lod(self):
        return [list(level) for level in self._lod]

    def set_lod(self, lod):
        lod = [[int(x) for x in level] for level in lod]
        check_lod(lod, self.array.shape[0] if self.array is not None and self.array.ndim else None)
        self._lod = lod

    def recursive_sequence_lengths(self):
        return [offsets_to_lengths(level) for level in self._lod]

    def set_recursive_sequence_lengths(self, lengths):
        self.set_lod([lengths_to_offsets(level) for level in lengths])

    def has_valid_recursive_sequence_lengths(self):
        try:
            check_lod(self._lod, self.array.shape[0] if self.array is not None else None)
        except InvalidArgument:
            return False
        return True

    def shape(self):
        return list(self.array.shape) if self.array is not None else []

    def _dtype(self):
        return convert_dtype(self.array.dtype)

    def _place(self):
        return place_of(self.array)

    def _is_initialized(self):
        return self.array is not None

    def __array__(self, dtype=None, copy=None):
        if self.array is None:
            raise PreconditionNotMet("LoDTensor: data expected, but the tensor is not initialised")
        array = self.array if isinstance(self.array, np.ndarray) else self.array.get()
        return array.astype(dtype) if dtype is not None else array

    def numpy(self):
        return np.asarray(self)

    def __len__(self):
        return self.array.shape[0]

    def __repr__(self):
        if self.array is None:
            return "LoDTensor(not initialised)"
        text = f"LoDTensor(shape={list(self.array.shape)}, dtype={self.array.dtype}"
        return text + (f", lod={self._lod})" if self._lod else ")")

    @property
    def nbytes(self):
        return int(self.array.nbytes) if self.array is not None else 0


Tensor = LoDTensor


class LoDTensorArray(list):
    """A list of LoDTensors (Fluid's tensor array, written and read by index)."""

    def __repr__(self):
        return f"LoDTensorArray({len(self)} tensors)"


class SelectedRows:
    """Sparse rows of a ``height x ...`` tensor: ``value[i]`` is row ``rows[i]``."""

    __slots__ = ("rows", "height", "value")

    def __init__(self, rows=None, height=0, value=None):
        self.rows = list(rows) if rows is not None else []
        self.height = int(height)
        self.value = value if value is not None else LoDTensor()

    def get_tensor(self):
        return self.value

    def set_height(self, height):
        self.height = int(height)

    def set_rows(self, rows):
        self.rows = list(rows)

    def to_dense(self, xp=np):
        """The dense ``[height, ...]`` array (rows repeated are summed)."""
        values = self.value.array
        dense = xp.zeros((self.height,) + tuple(values.shape[1:]), dtype=values.dtype)
        if self.rows:
            xp.add.at(dense, xp.asarray(self.rows), values)
        return dense

    def __repr__(self):
        return f"SelectedRows(height={self.height}, rows={self.rows})"


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """A LoDTensor from an array (or nested lists of ids) and sequence lengths.

    ``create_lod_tensor(np.arange(14).reshape(14, 1), [[5, 3, 2, 4]], place)`` gives LoD
    ``[[0, 5, 8, 10, 14]]``. With a list of lists, each inner list is one sequence of ids
    (int64, one column), as in Fluid.
    """
    if isinstance(data, LoDTensor):
        return create_lod_tensor(np.asarray(data), recursive_seq_lens, place)
    if isinstance(data, list):
        flat = [x for seq in data for x in (seq if isinstance(seq, (list, tuple)) else [seq])]
        lengths = [len(seq) for seq in data]
        if recursive_seq_lens and lengths != list(recursive_seq_lens[-1]):
            raise InvalidArgument(f"create_lod_tensor: sequence lengths expected to match the "
                                  f"data {lengths}, but received {recursive_seq_lens[-1]}")
        data = np.array(flat, dtype="int64").reshape(-1, 1)
    tensor = LoDTensor()
    tensor.set(np.asarray(data), place)
    tensor.set_recursive_sequence_lengths(recursive_seq_lens)
    return tensor


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    rows = sum(recursive_seq_lens[-1])
    data = np.random.randint(low, high + 1, [rows] + list(base_shape)).astype("int64")
    return create_lod_tensor(data, recursive_seq_lens, place)


def as_tensor(value, dtype=None, place=None):
    """A LoDTensor from a LoDTensor, an array, or a (array, lod) pair."""
    if isinstance(value, LoDTensor):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
        tensor = as_tensor(value[0], dtype, place)
        tensor.set_lod(value[1])
        return tensor
    xp = place.xp if place is not None else np
    array = xp.asarray(value, dtype=to_numpy_dtype(dtype) if dtype is not None else None)
    return LoDTensor(array)
