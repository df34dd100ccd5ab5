"""One step of a specialised build as ``Executor.run`` makes it, with the argument layout
worked out once per (feed names, fetch names) and only checked on each step.

A :class:`BoundCall` holds, for each fed name in the order the feed dict gives them, the
shape and type the build was specialised on and the pointer slot it goes to, and for each
fetched name where its value is read. A step then costs, beyond the one native call: per
feed an identity, type and shape check (and a pointer write when the array is a new
one), per parameter an identity check (:meth:`Parameters.bind`), and per fetch a copy.
Anything that does not fit the layout (another shape, type or kind of value) makes
:meth:`BoundCall.run` return None, and the caller takes the general path, which converts,
specialises and raises the typed errors.

A feed no op writes is read where the caller's array is (no copy): the array is held
until the next step, so its memory stays valid, and one that shares memory with a
parameter the step updates in place is copied instead, so the step reads the values it
was given, as the interpreter does. A feed some op overwrites, or one of a build whose
ops partly run in the interpreter, is copied into the build's own buffer.
"""
import ctypes
import operator

import numpy as np

from ... import c_parts
from ...exec.executor import FetchedArray
from ...exec.scope import Scope
from ...tensor.tensor import LoDTensor

_UNBOUND = object()
_VALUE = operator.attrgetter("value")
_ARRAY = operator.attrgetter("array")


def _bound_step():
    """The C module of :meth:`BoundCall.native_step`, built with the package."""
    return c_parts.load("fluid_nb.rewriters.native._bound_step", "the compiled step's C call")


def _span(array):
    """[first byte, last byte + 1) of ``array``'s memory."""
    start = array.ctypes.data
    return start, start + array.nbytes


class Parameters:
    """The persistables of a build as pointers into the scope's arrays: ``bind`` points at
    the arrays the scope holds now and is one identity check per parameter when none was
    replaced (the usual step)."""

    def __init__(self, variables, pointers, bind_one):
        self.variables = variables
        self.pointers = pointers
        self._bind_one = bind_one  # (scope, variable) -> the array to point at
        #: the arrays pointed at; nothing matches _UNBOUND (an empty tensor's None would)
        self.bound = [_UNBOUND] * len(variables)
        self.spans = []  # the bound arrays' memory, for the feeds' overlap check
        names = [v.name for v in variables]
        if len(names) == 1:
            self._holders = lambda found, name=names[0]: (found[name],)
        elif names:
            self._holders = operator.itemgetter(*names)
        else:
            self._holders = lambda found: ()

    def bind(self, scope):
        try:  # the scope's own holders (a name held by a parent scope: the slow path)
            arrays = tuple(map(_ARRAY, map(_VALUE, self._holders(scope.vars))))
        except (KeyError, AttributeError, TypeError):
            arrays = None
        if arrays is not None and all(map(operator.is_, arrays, self.bound)):
            return
        changed = False
        for k, v in enumerate(self.variables):
            held = scope.find_var(v.name)
            array = getattr(getattr(held, "value", None), "array", None)
            if array is self.bound[k] and array is not None:
                continue
            self.bound[k] = array = self._bind_one(scope, v)
            self.pointers[v.index] = array.ctypes.data if isinstance(array, np.ndarray) \
                else array.data.ptr
            changed = True
        if changed or len(self.spans) != len(self.bound):
            self.spans = [_span(a) for a in self.bound if isinstance(a, np.ndarray)]

    def overlaps(self, start, end):
        """Whether bytes [start, end) hold part of a bound parameter."""
        return any(start < stop and first < end for first, stop in self.spans)


class BoundCall:
    """The layout of ``run(feed, fetch_list)`` for one specialisation (host target, the
    feed's names in one order, the fetch's names): see the module's docstring."""

    def __init__(self, spec, feed, fetch_names):
        self.spec = spec
        #: the layout's step as one C call, where its maker asked for one (native_step)
        self.native = None
        feeds = {name: buffer for name, buffer in spec.feeds}
        slots = {v.name: v for v in spec.source.variables if v.role == "feed"}
        aliasing = spec.whole is not None
        #: per fed name, in the feed dict's order: (shape, dtype, feed slot or None)
        self.layout = []
        for name, value in feed.items():
            v = slots.get(name)
            slot = None
            if v is not None and name in feeds:
                alias = aliasing and name not in spec.written
                slot = spec.feed_slot(name, alias)
            self.layout.append((value.shape, value.dtype, slot))
        #: (position in the feed, IdRange) of each range a fed name's ids are checked for
        position = {name: k for k, name in enumerate(feed)}
        self.ranges = [(position[ids.name], ids) for ids in spec.source.id_ranges
                       if ids.name in position]
        #: per fetched name: ("buffer", array) | ("feed", slot) | ("scope", name)
        self.fetches = []
        for name in fetch_names:
            slot = next((s for shape, dtype, s in self.layout
                         if s is not None and s.name == name), None)
            if slot is not None and slot.alias:
                self.fetches.append(("feed", slot))
            elif name in spec.owned:
                self.fetches.append(("buffer", spec.owned[name]))
            else:
                self.fetches.append(("scope", name))

    def native_step(self, fetch_list):
        """This layout's step as one C call (``_bound_step.BoundStep``: ``step(feed,
        fetch_list, scope)``, None when the arguments are not the layout's), bound to the
        items of ``fetch_list``; None where the layout is not the plain one: one compiled
        entry, every feed to a slot of the build, every fetch from a buffer it owns."""
        spec = self.spec
        if spec.whole is None or fetch_list.__class__ not in (list, tuple) \
                or any(slot is None for _, _, slot in self.layout) \
                or any(kind != "buffer" for kind, _ in self.fetches):
            return None
        feeds = [(slot.name, shape, dtype, slot.strides, slot) + self._c_range(k)
                 for k, (shape, dtype, slot) in enumerate(self.layout)]
        parameters = spec.parameters
        return _bound_step().BoundStep(
            ctypes.cast(spec.whole, ctypes.c_void_p).value, spec.address, spec, feeds,
            parameters, tuple(v.name for v in parameters.variables), tuple(fetch_list),
            tuple(array for _, array in self.fetches), FetchedArray, Scope)

    def _c_range(self, k):
        """(size, also) of feed ``k`` for the C step: ids in [0, size) or equal to also
        (None: no such value; size -1: unchecked). Where two ops read the feed, the range
        both accept (an id only one refuses sends the step to the Python path, which
        checks each)."""
        ranges = [ids for position, ids in self.ranges if position == k]
        if not ranges:
            return -1, None
        alsos = {ids.also for ids in ranges}
        return min(ids.size for ids in ranges), alsos.pop() if len(alsos) == 1 else None

    def run(self, feed, scope, return_numpy):
        """The fetched values after one step, or None when ``feed`` does not fit the
        layout (nothing has run then)."""
        layout = self.layout
        if len(feed) != len(layout):
            return None
        spec = self.spec
        parameters = spec.parameters
        if self.ranges:  # an id out of range: the general path raises the typed error
            values = list(feed.values())
            if any(values[k].__class__ is np.ndarray and ids.first_bad(values[k]) is not None
                   for k, ids in self.ranges):
                return None
        for value, (shape, dtype, slot) in zip(feed.values(), layout):
            if value.__class__ is not np.ndarray or value.shape != shape or (
                    value.dtype is not dtype and value.dtype != dtype):
                return None  # (a slot taken already is reset by the general path's copy)
            # the array of the last step, aliased, needs nothing (take's first test, inline)
            if slot is not None and (value is not slot.fed or value.strides != slot.strides):
                slot.take(value, parameters)
        parameters.bind(scope)
        spec.whole(spec.address) if spec.whole is not None else spec.run_steps(scope)
        results = []
        for kind, source in self.fetches:
            if kind == "buffer":
                value = source.copy()
            elif kind == "feed":  # what was fed (held, or copied into the buffer)
                value = np.array(source.fed) if source.fed is not None else source.buffer.copy()
            else:
                value = spec.fetch_from_scope(scope, source)
            results.append(value.view(FetchedArray) if return_numpy else LoDTensor(value))
        return results


class FeedSlot:
    """Where one feed goes in a build's pointer array: the caller's array itself
    (``alias``; the last one is kept in ``fed``) or the build's own buffer it is copied
    into."""

    def __init__(self, name, index, buffer, pointers, alias):
        self.name, self.index, self.buffer = name, index, buffer
        self.pointers = pointers
        self.alias = alias
        self.fed = None  # the array the slot points at (aliasing), None: the buffer
        self.strides = buffer.strides

    def take(self, value, parameters):
        """Point at (or copy) ``value``, an array of the slot's shape and type."""
        if not self.alias:
            np.copyto(self.buffer, value)
            return
        if value is self.fed and value.strides == self.strides:
            return  # the array of the last step: the pointer is right
        if value.strides == self.strides and value.flags.aligned:
            start, end = _span(value)
            if not parameters.overlaps(start, end):
                self.pointers[self.index] = start
                self.fed = value
                return
        np.copyto(self.buffer, value)  # not C-ordered, or a parameter's memory
        self.reset()

    def reset(self):
        """Point at the build's own buffer again (its values are the caller's)."""
        if self.fed is not None:
            self.fed = None
            self.pointers[self.index] = self.buffer.ctypes.data
