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

from .. import c_parts
from ..errors import InvalidArgument, InvalidType, OutOfRange, PreconditionNotMet, expected
from .dtypes import convert_dtype, to_numpy_dtype
from .place import CPUPlace, place_of

_tensor = c_parts.load("fluid_nb.tensor._tensor", "LoDTensor's C parts")
TensorBase = _tensor.TensorBase
#: stack_column(entries, dtype, dims), stack_sequences(entries, dtype, dims): a feed's
#: common column as one array, and a column of sequences as (array, offsets) (see _tensor.c)
stack_column, stack_sequences = _tensor.stack_column, _tensor.stack_sequences
#: sequence_max(data, offsets, out, index): sequence_pool MAX on the host in one pass, each
#: sequence's first maximal row (a NaN is maximal); False where the op's loop must (_tensor.c)
sequence_max = _tensor.sequence_max


def index_add(xp, target, index, values):
    """``target[index[i]] += values[i]`` along dim 0 for each i in order, in place on
    ``target`` (a fresh array the caller owns), repeated indices summed; returns ``target``.

    np.add.at's meaning, and on the host its sums bit for bit: float rows indexed by one
    integer array take one C loop (``_tensor.c``, about 60x np.add.at on rows of 32 floats);
    any other index (a tuple of arrays, a mask) or dtype goes to np.add.at, and on a device
    to CuPy's scatter-add."""
    if xp is np:
        if type(index) is np.ndarray and index.dtype.kind == "i" and index.dtype != np.int64:
            index = index.astype(np.int64)
        if type(values) is np.ndarray and values.dtype == target.dtype:
            values = np.ascontiguousarray(values)
        if _tensor.index_add(target, index, values):
            return target
    add_at = getattr(getattr(xp, "add", None), "at", None)
    if add_at is not None:
        add_at(target, index, values)
    else:  # older CuPy spells it cupyx.scatter_add
        import cupyx
        cupyx.scatter_add(target, index, values)
    return target


_PRINT_LIMIT = 1000  # values ``print(tensor)`` writes out, as NumPy's own threshold


def _offset(value, where, level):
    """One LoD offset or length as an int: ints and integral floats (``1.0``) are fine;
    fractions, NaN, strings and other objects are refused rather than truncated."""
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgument(expected(where, f"LoD level {level} entries", "integers",
                                       f"the bool {value!r}"))
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    raise InvalidType(expected(where, f"LoD level {level} entries", "integers",
                                   f"{value!r} ({type(value).__name__})"))


def _levels(lod, where, what="LoD"):
    """``lod`` as a list of levels, each a list of ints (refusing anything else)."""
    if isinstance(lod, np.ndarray) and lod.ndim == 2:
        lod = lod.tolist()
    if not isinstance(lod, (list, tuple)):
        raise InvalidType(expected(where, what, "a list of levels, each a list of integers",
                                       f"{type(lod).__name__}"))
    levels = []
    for level, entries in enumerate(lod):
        if isinstance(entries, np.ndarray) and entries.ndim == 1:
            entries = entries.tolist()
        if not isinstance(entries, (list, tuple)):
            raise InvalidArgument(expected(where, f"{what} level {level}",
                                           "a list of integers", f"{entries!r}"))
        levels.append([_offset(value, where, level) for value in entries])
    return levels


def _all_ints(lod):
    return isinstance(lod, (list, tuple)) and all(
        isinstance(level, (list, tuple)) and all(type(x) is int for x in level) for level in lod)


def check_lod(lod, rows=None, where="LoDTensor"):
    """Raise InvalidArgument unless ``lod`` is a valid offset LoD (for ``rows`` rows)."""
    if _tensor.valid_lod(lod, rows):  # plain levels of ints, checked in C
        return
    if not _all_ints(lod):
        lod = _levels(lod, where)
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


def checked_lod(lod, rows=None, where="LoDTensor"):
    """The one way a LoD gets in: ``lod`` as levels of ints, checked by :func:`check_lod`.
    A LoD already made of int lists is returned as it is (no copy)."""
    if _tensor.valid_lod(lod, rows):
        return lod
    if lod is None:
        raise InvalidArgument(expected(where, "LoD", "a list of levels (use [] for none)",
                                       "None"))
    if not _all_ints(lod):
        lod = _levels(lod, where)
    check_lod(lod, rows, where)
    return lod


def checked_lengths(lengths, where="LoDTensor"):
    """Sequence lengths (``[[5, 3, 2, 4]]``) as levels of non-negative ints."""
    if lengths is None:
        raise InvalidArgument(expected(where, "sequence lengths",
                                       "a list of levels (use [] for none)", "None"))
    levels = _levels(lengths, where, "sequence lengths")
    for level, entries in enumerate(levels):
        negative = [n for n in entries if n < 0]
        if negative:
            raise InvalidArgument(expected(where, f"sequence lengths of level {level}",
                                           "non-negative integers", entries))
    return levels


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
    where = "lod_from_row_offsets"
    if row_offsets is None:
        raise InvalidArgument(expected(where, "row offsets",
                                       "a list of levels, each a list of integers", "None"))
    levels = _levels(row_offsets, where, "row offsets")
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


def _is_lengths(value):
    """A list of lists of Python ints: what Fluid's ``LoDTensor(lengths)`` takes."""
    return bool(value) and all(level.__class__ is list and level and
                               all(n.__class__ is int for n in level) for level in value)


class LoDTensor(TensorBase):
    """A dense array (NumPy or CuPy) with an offset LoD: ``LoDTensor(array=None, lod=())``.

    ``np.array(t)`` gives the data; ``t.lod()`` the offsets; ``t.shape()`` the dims.
    ``LoDTensor(ndarray)`` and ``LoDTensor()`` are made in C (``TensorBase``, see
    ``_tensor.c``: the commonest calls, a frame each in Python); every other call runs
    :meth:`_init`, which sets the same two slots.
    """

    __slots__ = ("array", "_lod")

    def _init(self, array=None, lod=()):
        # ``_lod``: offset levels; never changed in place (``set_lod`` replaces it), so
        # tensors share LoD lists, and no LoD is one shared empty tuple
        if array.__class__ is list and not lod and _is_lengths(array):
            # Fluid's ``LoDTensor(recursive_sequence_lengths)``: the LoD now, data later
            array, lod = None, [lengths_to_offsets(level) for level in checked_lengths(array)]
        if array.__class__ is not np.ndarray and array is not None:
            array = _as_array(array)
        self.array = array
        if lod:
            # the structure only: kernels share a LoD with outputs of other row counts
            # (reshape2 keeps X's LoD), as Paddle does; feeds check the rows
            lod = checked_lod(lod)
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
        """Set the offset LoD (checked against the rows, refused rather than truncated)."""
        lod = checked_lod(lod, _rows(self.array), "LoDTensor.set_lod")
        self._lod = [list(level) for level in lod]

    def recursive_sequence_lengths(self):
        return [offsets_to_lengths(level) for level in self._lod]

    def set_recursive_sequence_lengths(self, lengths):
        """Set the LoD from sequence lengths (``[[5, 3, 2, 4]]``)."""
        lengths = checked_lengths(lengths, "LoDTensor.set_recursive_sequence_lengths")
        lod = [lengths_to_offsets(level) for level in lengths]
        check_lod(lod, _rows(self.array), "LoDTensor.set_recursive_sequence_lengths")
        self._lod = lod

    def has_valid_recursive_sequence_lengths(self):
        try:
            check_lod(self._lod, self.array.shape[0] if self.array is not None else None)
        except InvalidArgument:
            return False
        return True

    def shape(self):
        return list(self.array.shape) if self.array is not None else []

    def _get_dims(self):
        """The dims, as Fluid's ``Tensor._get_dims`` (``shape()`` by another name)."""
        return self.shape()

    def _set_dims(self, dims):
        """Give the tensor ``dims``: its data reshaped when the element count fits, else
        fresh zeros of its dtype (float32 when it has none), as Fluid resizes."""
        dims = tuple(int(d) for d in dims)
        array = self.array
        if array is not None and array.size == int(np.prod(dims, dtype=np.int64)):
            self.array = array.reshape(dims)
        else:
            xp = np if array is None or isinstance(array, np.ndarray) else place_of(array).xp
            self.array = xp.zeros(dims, dtype=array.dtype if array is not None else np.float32)

    def _dtype(self):
        return convert_dtype(self.array.dtype)

    def _place(self):
        return place_of(self.array)

    def _is_initialized(self):
        return self.array is not None

    def __array__(self, dtype=None, copy=None):
        if self.array is None:
            raise PreconditionNotMet("LoDTensor: data expected, but the tensor is not initialised")
        array = self.array
        if not isinstance(array, np.ndarray):  # a device array, or a NumPy scalar a kernel made
            array = array.get() if hasattr(array, "get") else np.asarray(array)
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

    def __str__(self):
        """What ``print(tensor)`` shows in Fluid 1.x: the LoD, the dims, the layout, the
        dtype and the data, flattened in row-major order (past ``_PRINT_LIMIT`` values the
        rest is counted, not printed: a notebook cell is not a log file)."""
        if self.array is None:
            return "\tlod: {}\n\tnot initialised\n"
        lod = "{" + "".join("{" + ", ".join(str(int(o)) for o in level) + "}"
                            for level in self._lod) + "}"
        flat = np.asarray(self).reshape(-1)
        shown = flat[:_PRINT_LIMIT]
        if flat.dtype.kind == "f":
            values = " ".join(format(float(v), "g") for v in shown)
        else:
            values = " ".join(str(v) for v in shown.astype(int if flat.dtype.kind == "b"
                                                          else flat.dtype).tolist())
        if flat.size > _PRINT_LIMIT:
            values += f" ... ({flat.size - _PRINT_LIMIT} more)"
        dims = ", ".join(str(d) for d in self.array.shape)
        return (f"\tlod: {lod}\n\tdim: {dims}\n\tlayout: NCHW\n"
                f"\tdtype: {np.dtype(self.array.dtype).name}\n\tdata: [{values}]\n")

    @property
    def nbytes(self):
        return int(self.array.nbytes) if self.array is not None else 0


Tensor = LoDTensor


def _as_array(value):
    """A tensor holds arrays only: NumPy turns 0-D results into scalars (``argmax`` of a
    vector, the sum of two 0-D arrays), which have no array behaviour (no writes, no
    ``base``, another type for every check); a device array stays as it is."""
    if isinstance(value, (np.generic, int, float, complex)):
        return np.asarray(value)
    if isinstance(value, np.ndarray):  # a subclass (a fetched array): its plain array
        return value.view(np.ndarray)
    return value


def _rows(array):
    """The row count a LoD must end at (None for no array or a 0-d one)."""
    if array is None:
        return None
    shape = getattr(array, "shape", None)
    return shape[0] if shape else None


_tensor.configure(LoDTensor, np.ndarray, LoDTensor._init)


class LoDTensorArray(list):
    """A list of LoDTensors (Fluid's tensor array, written and read by index)."""

    def __repr__(self):
        return f"LoDTensorArray({len(self)} tensors)"


class SelectedRows:
    """Sparse rows of a ``height x ...`` tensor: ``value`` row i is row ``rows()[i]``.

    As Fluid's ``core.SelectedRows``: ``rows()`` and ``height()`` are methods, set by
    ``set_rows`` / ``set_height``; ``sync_index()`` rebuilds the row -> position map that
    ``index(row)`` reads.
    """

    __slots__ = ("_rows", "_height", "value", "_index")

    def __init__(self, rows=None, height=0, value=None):
        self._rows = list(rows) if rows is not None else []
        self._height = int(height)
        self.value = value if value is not None else LoDTensor()
        self._index = None

    def rows(self):
        return self._rows

    def height(self):
        return self._height

    def get_tensor(self):
        return self.value

    def numel(self):
        """The element count of the value (0 when it holds no data)."""
        array = self.value.array
        return int(array.size) if array is not None else 0

    def set_height(self, height):
        self._height = int(height)

    def set_rows(self, rows):
        self._rows = list(rows)
        self._index = None

    def sync_index(self):
        """Rebuild the row -> position map from ``rows()`` (the first position of a
        repeated row)."""
        index = {}
        for position, row in enumerate(self._rows):
            index.setdefault(int(row), position)
        self._index = index

    def index(self, row):
        """The position of ``row`` among ``rows()``; OutOfRange when it is not there."""
        if self._index is None:
            self.sync_index()
        position = self._index.get(int(row))
        if position is None:
            raise OutOfRange(expected("SelectedRows.index", "a row", f"one of {self._rows}",
                                      row))
        return position

    def to_dense(self, xp=np):
        """The dense ``[height, ...]`` array (rows repeated are summed)."""
        values = self.value.array
        dense = xp.zeros((self._height,) + tuple(values.shape[1:]), dtype=values.dtype)
        if self._rows:
            index_add(xp, dense, xp.asarray(self._rows), values)
        return dense

    def __repr__(self):
        return f"SelectedRows(height={self._height}, rows={self._rows})"


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A LoDTensor of random int64 ids in ``[low, high]`` (both included, as Fluid's), of
    shape ``[total length] + base_shape``: ``create_random_int_lodtensor([[2, 3]], [1], place,
    low=0, high=9)`` is 5 ids in two sequences. Draws from NumPy's global generator, as Fluid
    does (``np.random.seed`` makes it repeatable)."""
    where = "create_random_int_lodtensor"
    lengths = checked_lengths(recursive_seq_lens, where)
    if not isinstance(base_shape, (list, tuple)) or not all(
            isinstance(d, (int, np.integer)) and d >= 0 for d in base_shape):
        raise InvalidArgument(f"{where}: base_shape expected a list of sizes >= 0, but "
                              f"received {base_shape!r}")
    if not (isinstance(low, (int, np.integer)) and isinstance(high, (int, np.integer))
            and low <= high):
        raise InvalidArgument(f"{where}: low and high expected integers with low <= high, "
                              f"but received {low!r} and {high!r}")
    total = sum(lengths[-1]) if lengths else 0
    data = np.random.randint(low, high + 1, size=[total] + list(base_shape), dtype="int64")
    return create_lod_tensor(data, recursive_seq_lens, place)


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """A LoDTensor from an array (or nested lists of ids) and sequence lengths.

    ``create_lod_tensor(np.arange(14).reshape(14, 1), [[5, 3, 2, 4]], place)`` gives LoD
    ``[[0, 5, 8, 10, 14]]``. With a list of lists, each inner list is one sequence of ids
    (int64, one column), as in Fluid.
    """
    where = "create_lod_tensor"
    lengths = checked_lengths(recursive_seq_lens, where)
    if isinstance(data, LoDTensor):
        data = value_array(data, where)
    elif isinstance(data, list) and data and all(isinstance(seq, (list, tuple, np.ndarray))
                                                 for seq in data):
        # one sequence per entry (lists of ids, or arrays of rows): joined, as in Fluid
        found = [len(seq) for seq in data]
        if lengths and found != lengths[-1]:
            raise InvalidArgument(f"{where}: sequence lengths expected to match the "
                                  f"data {found}, but received {lengths[-1]}")
        if all(isinstance(seq, (list, tuple)) for seq in data):
            data = value_array([x for seq in data for x in seq], where, "int64").reshape(-1, 1)
        else:
            rows = [value_array(seq, where) for seq in data]
            data = np.concatenate([r.reshape(len(r), -1) for r in rows], axis=0)
    else:
        data = value_array(data, where)
    lod = [lengths_to_offsets(level) for level in lengths]
    check_lod(lod, _rows(data), where)
    tensor = LoDTensor()
    tensor.set(data, place)
    tensor._lod = lod
    return tensor


_ARRAY_KINDS = "biufc"  # bool, ints, floats, complex: what a tensor can hold


def value_array(value, where, dtype=None, xp=np):
    """The one conversion of a user's value (array, nested lists, scalar, LoDTensor) to a
    numeric array: ragged lists, None, strings, objects and uninitialised tensors are
    refused with ``where`` named; NaN and infinities are values like any other."""
    if isinstance(value, LoDTensor):
        if value.array is None:
            raise InvalidArgument(expected(where, "value", "an initialised tensor",
                                           "a LoDTensor holding no data"))
        value = value.array
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise InvalidArgument(expected(where, "value", "an array or nested lists of numbers",
                                       f"{type(value).__name__}"))
    want = to_numpy_dtype(dtype) if dtype is not None else None
    try:
        array = xp.asarray(value, dtype=want)
    except (ValueError, TypeError, OverflowError) as exc:
        shape = _ragged_shape(value)
        got = f"ragged nested lists ({shape})" if shape else f"{type(value).__name__} ({exc})"
        raise InvalidArgument(expected(where, "value", "a rectangular array of numbers",
                                       got)) from None
    if array.dtype.kind not in _ARRAY_KINDS:
        raise InvalidArgument(expected(where, "value", "an array of numbers",
                                       f"dtype {array.dtype}"))
    return array


_KIND = {"f": "float", "i": "int", "u": "int", "b": "bool", "c": "complex"}


def lossless_cast(array, want, where):
    """``array`` as dtype ``want`` where no value can change kind (float64 -> float32,
    int32 -> int64, int or bool -> float); a lossy cast (float -> int) is refused."""
    want = np.dtype(want)
    if array.dtype == want:
        return array
    have_kind, want_kind = _KIND.get(array.dtype.kind), _KIND.get(want.kind)
    lossless = have_kind == want_kind or (have_kind in ("int", "bool") and want_kind == "float") \
        or (have_kind == "bool" and want_kind == "int")
    if not lossless:
        raise InvalidArgument(f"{where}: dtype expected {want}, but received {array.dtype} "
                              f"(a {have_kind or array.dtype} array cannot be fed to a "
                              f"{want_kind or want} variable without losing values)")
    return array.astype(want)


def _ragged_shape(value):
    """For nested lists of unequal lengths, a short description of where they differ."""
    if not isinstance(value, (list, tuple)):
        return None
    lengths = [len(item) if isinstance(item, (list, tuple)) else None for item in value]
    if len(set(lengths)) > 1:
        return f"rows of lengths {lengths[:8]}"
    for item in value:
        inner = _ragged_shape(item)
        if inner:
            return inner
    return None


def as_tensor(value, dtype=None, place=None, where="value"):
    """A LoDTensor from a LoDTensor, an array, or a (array, lod) pair."""
    if isinstance(value, LoDTensor):
        value_array(value, where)  # refuses an uninitialised tensor
        check_lod(value._lod, _rows(value.array), where)
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
        array = as_tensor(value[0], dtype, place, where).array
        return LoDTensor(array, [list(level) for level in
                                 checked_lod(value[1], _rows(array), where)])
    xp = place.xp if place is not None else np
    return LoDTensor(value_array(value, where, dtype, xp))
