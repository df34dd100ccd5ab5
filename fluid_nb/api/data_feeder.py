"""DataFeeder: a minibatch (a list of sample tuples, one entry per feed variable) turned
into the ``feed`` dict ``Executor.run`` takes: one LoDTensor per variable, with LoD for
variables of lod_level > 0 (each sample's entry is then a sequence, or a sequence of
sequences)."""
import numpy as np

from ..errors import InvalidArgument, InvalidType, expected
from ..tensor.place import CPUPlace
from ..tensor.tensor import (LoDTensor, lossless_cast, stack_column, stack_sequences,
                             value_array)
from ..tensor.dtypes import to_numpy_dtype
from ..framework.program import Variable, default_main_program

# (Fluid 1.8 keeps its argument checks here: fluid.data_feeder.check_variable_and_dtype)
from ..framework.type_checks import check_dtype, check_type, check_variable_and_dtype  # noqa: F401

__all__ = ["DataFeeder"]


_SAMPLE_TYPES = frozenset((tuple, list))


def _guides(shape):
    """True when a declared shape has at most one unknown dim: only then can it guide a
    reshape (and a column be checked against it)."""
    return sum(1 for d in shape if d < 0) <= 1


def _shown(value):
    return f"{repr(value)[:40]} ({type(value).__name__})"


class DataToLoDTensorConverter:
    """Collects one feed variable's entries of a minibatch, then builds the LoDTensor."""

    def __init__(self, place, lod_level, shape, dtype, name=""):
        self.place = place
        self.lod_level = lod_level
        self.name = name
        self.shape = list(shape) if _guides(shape) else None
        self.dtype = to_numpy_dtype(dtype)
        self._reset()

    def _reset(self):
        self.data = []
        self.lod = [[] for _ in range(self.lod_level)]

    def feed(self, data):
        self._feed(data, self.lod, self.lod_level)

    def feed_entries(self, entries):
        """``feed`` each of ``entries`` (a minibatch's column for this variable)."""
        if self.lod_level == 0:
            self.data.extend(entries)
            return
        for entry in entries:
            self._feed(entry, self.lod, self.lod_level)

    def _feed(self, data, lod, lod_level):
        if lod_level == 0:
            self.data.append(data)
            return
        if not isinstance(data, (list, tuple, np.ndarray)):
            raise InvalidArgument(expected(f"DataFeeder '{self.name}'", "entry",
                                           f"a sequence (the variable has lod_level "
                                           f"{self.lod_level})", _shown(data)))
        lod[0].append(len(data))
        if lod_level == 1:  # the sequence's items are entries (a word id, a row)
            self.data.extend(data)
            return
        for item in data:
            self._feed(item, lod[1:], lod_level - 1)

    def done(self):
        where = f"DataFeeder '{self.name}'"
        arr = lossless_cast(value_array(self.data, where), self.dtype, where)
        if self.shape and len(arr.shape) != len(self.shape):
            try:
                arr = arr.reshape(self.shape)
            except ValueError:
                raise InvalidArgument(f"DataFeeder: data of '{self.name}' expected to reshape "
                                      f"to {self.shape} (the data layer's shape), but "
                                      f"received shape {list(arr.shape)}") from None
        if self.shape and any(want >= 0 and want != got
                              for want, got in zip(self.shape[1:], arr.shape[1:])):
            raise InvalidArgument(expected(where, "shape", f"{self.shape} (-1 is any size)",
                                           list(arr.shape)))
        if self.place.xp is np:  # made here from the entries: nobody else holds it
            tensor = LoDTensor(arr)
        else:
            tensor = LoDTensor()
            tensor.set(arr, self.place)
        if self.lod_level > 0:
            tensor.set_recursive_sequence_lengths(self.lod)
        self._reset()
        return tensor


class DataFeeder:
    """``DataFeeder(feed_list=[img, label], place=fluid.CPUPlace())``; then
    ``exe.run(feed=feeder.feed(minibatch))``. ``feed_list`` holds Variables or names
    (looked up in ``program``, the default main program when None)."""

    def __init__(self, feed_list, place, program=None):
        self.feed_dtypes = []
        self.feed_names = []
        self.feed_shapes = []
        self.feed_lod_level = []
        program = program if program is not None else default_main_program()
        for item in feed_list:
            if isinstance(item, str):
                var = program.global_block()._find_var_recursive(item)
                if var is None:
                    raise InvalidArgument(f"DataFeeder: feed variable '{item}' expected in the "
                                          f"program, but it is not there")
                item = var
            if not isinstance(item, Variable):
                raise InvalidType(f"DataFeeder: feed_list items expected Variable or "
                                  f"name, but received {type(item).__name__}")
            self.feed_dtypes.append(item.dtype)
            self.feed_names.append(item.name)
            self.feed_shapes.append(item.shape)
            self.feed_lod_level.append(item.lod_level)
        self.place = place if place is not None else CPUPlace()
        #: per variable, (stacker, dtype, declared dims) where its column may be stacked
        #: straight into a tensor (no LoD or one level, fed on the host, at most one
        #: unknown dim), else None
        self._stacked = [
            (stack_column if lod == 0 else stack_sequences, np.dtype(to_numpy_dtype(dtype)),
             tuple(shape))
            if lod <= 1 and self.place.device == "cpu" and _guides(shape)
            else None
            for lod, shape, dtype in zip(self.feed_lod_level, self.feed_shapes,
                                         self.feed_dtypes)]

    def _converter(self, index):
        return DataToLoDTensorConverter(self.place, self.feed_lod_level[index],
                                        self.feed_shapes[index], self.feed_dtypes[index],
                                        self.feed_names[index])

    def feed(self, iterable):
        """{name: LoDTensor} for one minibatch: an iterable of samples, each a tuple or
        list with one entry per feed variable."""
        samples = list(iterable)
        width = len(self.feed_names)
        # the common minibatch, a list of tuples or lists of the right width, is checked
        # and split into columns in C; anything else is looked at sample by sample
        if not (_SAMPLE_TYPES.issuperset(map(type, samples))
                and {width}.issuperset(map(len, samples))):
            for sample in samples:
                if not isinstance(sample, (list, tuple)):
                    raise InvalidArgument(expected("DataFeeder", "each sample",
                                                   f"a tuple or list of {width} entries (one "
                                                   f"per feed variable {self.feed_names})",
                                                   _shown(sample)))
                if len(sample) != width:
                    raise InvalidArgument(f"DataFeeder: each sample expected {width} "
                                          f"entries (one per feed variable "
                                          f"{self.feed_names}), but received {len(sample)}")
        feed = {}
        columns = list(zip(*samples)) if samples else [()] * width
        for index, (name, column, stacked) in enumerate(zip(self.feed_names, columns,
                                                            self._stacked)):
            if stacked is not None:  # the common column (arrays of one shape and dtype,
                # numbers, or sequences of numbers) stacked in C as its converter would make
                # it; None: the converter looks
                stack, want, dims = stacked
                made = stack(column, want, dims)
                if made is not None:
                    if stack is stack_column:
                        feed[name] = LoDTensor(made)
                    else:
                        feed[name] = LoDTensor(made[0], [made[1]])
                    continue
            converter = self._converter(index)
            converter.feed_entries(column)
            feed[name] = converter.done()
        return feed

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per minibatch in ``iterable`` (one per device)."""
        for batch in iterable:
            yield self.feed(batch)

    def decorate_reader(self, reader, multi_devices=False, num_places=None, drop_last=True):
        """A reader of feed dicts from a reader of minibatches."""
        def decorated():
            for batch in reader():
                yield self.feed(batch)
        return decorated
