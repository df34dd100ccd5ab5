"""``fluid.io.DataLoader`` and ``fluid.io.PyReader``: feed a program from a Python generator.

A loader is given a generator of samples, of sample lists or of whole batches, and the
variables it feeds (``feed_list``). Two ways to use it, as in Fluid:

* iterable (the default): ``for data in loader(): exe.run(main, feed=data)``. Each item is
  a list with one ``{name: LoDTensor}`` dict per place, or, with ``return_list=True``, a
  list per place of the values in ``feed_list`` order. As in Fluid, N places take N
  consecutive batches, one each (a last incomplete group is dropped when ``drop_last``);
  ``Executor.run`` of a CompiledProgram runs such a group on its one place as one step;
* not iterable: the loader adds a ``read`` op at the head of the main program that fills
  the feed variables from the loader, so ``exe.run(main)`` needs no feed;
  ``loader.start()`` begins a pass and ``exe.run`` raises ``fluid.core.EOFException`` when
  it is over, after which ``loader.reset()`` makes the loader ready for the next pass.

Batches are built the way ``DataFeeder`` builds them (LoD from nested sequences, the
variables' dtypes and shapes), in the calling thread: nothing runs in the background.
"""
import itertools
import weakref

import numpy as np

from ..data_feeder import DataFeeder
from ...errors import InvalidArgument, InvalidType, OutOfRange, PreconditionNotMet, expected
from ...tensor.tensor import LoDTensor
from ...framework import registry, unique_name
from ...tensor.dtypes import VarType
from ...framework.program import Variable

__all__ = ["DataLoader", "PyReader", "default_collate_fn", "EOFException"]


class EOFException(OutOfRange):
    """A non-iterable loader's pass is over (``fluid.core.EOFException``)."""


#: reader variable name -> the loader a ``read`` op takes its batches from
_LOADERS = weakref.WeakValueDictionary()


def next_batch(reader_name):
    """The next batch of the loader behind reader variable ``reader_name`` (for the ``read``
    op): a list of LoDTensors in its feed order."""
    loader = _LOADERS.get(reader_name)
    if loader is None:
        raise PreconditionNotMet(expected("read", f"a loader for reader '{reader_name}'",
                                          "one that exists", "none (it was deleted)"))
    return loader._next_for_read()


def _read_kernel(ctx, reader):
    """The ``read`` op: the next batch of the loader behind the Reader variable
    (``fluid.io.DataLoader`` made with ``iterable=False``); EOFException when its pass is
    over."""
    return next_batch(ctx.op.inputs["Reader"][0])


registry.attach_kernel("read", _read_kernel)


def default_collate_fn(batch):
    """Samples (tuples of fields) -> one array per field, stacked along a new first axis."""
    if not batch or not isinstance(batch[0], (list, tuple)):
        raise InvalidType(expected("default_collate_fn", "batch",
                                   "a non-empty list of samples, each a tuple of fields",
                                   repr(batch)[:60]))
    return [np.stack([np.asarray(sample[i]) for sample in batch])
            for i in range(len(batch[0]))]


class GeneratorLoader:
    """What ``DataLoader.from_generator`` and ``PyReader`` return (see the module doc)."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                 return_list=False, drop_last=True):
        if feed_list is None or not isinstance(feed_list, (list, tuple)) or not all(
                isinstance(v, Variable) for v in feed_list) or not feed_list:
            raise InvalidType(expected("DataLoader", "feed_list",
                                       "a non-empty list of the Variables it feeds",
                                       repr(feed_list)[:60]))
        if capacity is not None and (not isinstance(capacity, int) or capacity < 1):
            raise InvalidArgument(expected("DataLoader", "capacity", "a positive int",
                                           repr(capacity)))
        self._feed_list = list(feed_list)
        self._iterable = bool(iterable)
        self._drop_last = bool(drop_last)
        self._place_count = 1  # how many batches one item of an iterable loader holds
        self._return_list = bool(return_list)
        self._batches = None  # a generator function of feed dicts, once set
        self._running = None  # the pass a non-iterable loader is in
        self._reader_name = None
        if not self._iterable:
            self._add_read_op()

    # --- sources ------------------------------------------------------------------------
    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """Samples from ``reader()``, ``batch_size`` of them to a batch."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InvalidArgument(expected("set_sample_generator", "batch_size",
                                           "a positive int", repr(batch_size)))
        self._check_reader("set_sample_generator", reader)

        def sample_lists():
            samples = iter(reader())
            while True:
                chunk = list(itertools.islice(samples, batch_size))
                if not chunk or (drop_last and len(chunk) < batch_size):
                    return
                yield chunk
        return self.set_sample_list_generator(sample_lists, places)

    def set_sample_list_generator(self, reader, places=None):
        """Lists of samples from ``reader()``, one list to a batch."""
        self._check_reader("set_sample_list_generator", reader)
        self._set_places("set_sample_list_generator", places)
        feeder = DataFeeder(self._feed_list, place=None,
                            program=self._feed_list[0].block.program)

        def batches():
            for samples in reader():
                yield feeder.feed(samples)
        self._batches = batches
        return self

    def set_batch_generator(self, reader, places=None):
        """Whole batches from ``reader()``: one array (or LoDTensor) per feed variable."""
        self._check_reader("set_batch_generator", reader)
        self._set_places("set_batch_generator", places)
        names = [v.name for v in self._feed_list]

        def batches():
            for batch in reader():
                if isinstance(batch, dict):
                    yield {name: batch[name] for name in names}
                    continue
                if not isinstance(batch, (list, tuple)) or len(batch) != len(names):
                    raise InvalidArgument(expected(
                        "set_batch_generator", "each batch",
                        f"{len(names)} values (one per feed variable {names})",
                        repr(batch)[:60]))
                yield dict(zip(names, batch))
        self._batches = batches
        return self

    # PyReader's names for the same
    decorate_sample_generator = set_sample_generator
    decorate_sample_list_generator = set_sample_list_generator
    decorate_batch_generator = set_batch_generator

    def _set_places(self, where, places):
        """Remember how many places an iterable loader feeds (a place or a list of them)."""
        if places is None:
            return
        places = list(places) if isinstance(places, (list, tuple)) else [places]
        if not places:
            raise InvalidArgument(expected(where, "places", "a place or a non-empty list of "
                                           "places", "an empty list"))
        self._place_count = len(places)

    @staticmethod
    def _check_reader(where, reader):
        if not callable(reader):
            raise InvalidType(expected(where, "reader",
                                       "a function returning an iterable (a generator)",
                                       type(reader).__name__))

    def _source(self):
        if self._batches is None:
            raise PreconditionNotMet("DataLoader: a source expected (set_sample_generator, "
                                     "set_sample_list_generator or set_batch_generator), "
                                     "but none was set")
        return self._batches()

    # --- iterable use -------------------------------------------------------------------
    def __call__(self):
        return self.__iter__()

    def __iter__(self):
        if not self._iterable:
            raise PreconditionNotMet("DataLoader: iterating expected an iterable loader, but "
                                     "this one was made with iterable=False (use start() and "
                                     "exe.run until EOFException, then reset())")
        names = [v.name for v in self._feed_list]
        batches = iter(self._source())
        while True:
            group = list(itertools.islice(batches, self._place_count))
            if not group or (self._drop_last and len(group) < self._place_count):
                return
            if self._return_list:
                yield [[np.asarray(feed[name]) for name in names] for feed in group]
            else:
                yield group

    # --- non-iterable use ---------------------------------------------------------------
    def _add_read_op(self, reader_name=None):
        program = self._feed_list[0].block.program
        block = program.global_block()
        self._reader_name = reader_name or unique_name.generate("create_py_reader")
        reader = block.create_var(name=self._reader_name, type=VarType.READER,
                                  persistable=True)
        block._prepend_op(type="read", inputs={"Reader": [reader]},
                          outputs={"Out": [v.name for v in self._feed_list]})
        _LOADERS[self._reader_name] = self

    def start(self):
        """Begin a pass (non-iterable loaders)."""
        if self._iterable:
            raise PreconditionNotMet("DataLoader.start: a non-iterable loader expected "
                                     "(iterable=False), but this one is iterated")
        if self._running is not None:
            raise PreconditionNotMet("DataLoader.start: a loader that is not running "
                                     "expected; call reset() after the pass")
        self._running = iter(self._source())

    def reset(self):
        """End the pass (after EOFException, or early)."""
        self._running = None

    def _next_for_read(self):
        if self._running is None:
            raise PreconditionNotMet("read: a started loader expected, but start() was not "
                                     "called (or the pass ended and reset() was not)")
        try:
            feed = next(self._running)
        except StopIteration:
            raise EOFException("read: the loader's pass is over (catch "
                               "fluid.core.EOFException, then call reset())") from None
        return [value if isinstance(value, LoDTensor) else LoDTensor(np.asarray(value))
                for value in (feed[v.name] for v in self._feed_list)]


class DataLoader:
    """``DataLoader.from_generator(feed_list, capacity, ...)``: see the module docstring."""

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                       return_list=False, use_multiprocess=False, drop_last=True):
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list,
                               drop_last)

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        raise PreconditionNotMet("DataLoader.from_dataset: Fluid's C++ Dataset (the "
                                 "train_from_dataset trainers) expected, which fluid_nb does not "
                                 "have; use DataLoader.from_generator")


def PyReader(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
             return_list=False):
    """Fluid 1.x's name for a generator loader (``decorate_*`` set its source)."""
    return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list)
