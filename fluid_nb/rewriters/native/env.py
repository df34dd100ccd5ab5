"""What an emitter sees of the variables of the op it writes code for.

Two kinds of environment give emitters the same questions (shape, C type, kind, pointer):

- :class:`StaticEnv`, for a program without LoD or sub-blocks: the generated code is
  specialised on one set of feed shapes, every size is a literal and every variable a
  plain pointer;
- :class:`DynamicEnv`, for a program whose sizes change from batch to batch (a LoD feed, a
  ``while`` loop): every variable is a run-time object (``Tensor<T>`` with dims and LoD, a
  ``TensorArray<T>``, a ``RankTable``), a size fixed by the program (declared, such as a
  hidden width) stays a literal and one that is not (a batch, a sequence's rows) is a
  :class:`Dim`, read from the tensor's dims at run time. Each emitter states the dims of
  what it writes (``env.resize``); in a static environment that writes nothing.
"""
import numpy as np

from .emitter_table import NoEmitter

CTYPES = {np.dtype("float32"): "float", np.dtype("float64"): "double",
          np.dtype("int64"): "int64_t", np.dtype("int32"): "int32_t",
          np.dtype("bool"): "bool", np.dtype("uint8"): "uint8_t", np.dtype("int8"): "int8_t"}


class Dim:
    """A size known only at run time: the C++ expression that reads it (``x.dims[0]``).
    Products with ints and other Dims give Dims; two Dims are equal when their
    expressions are."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def __str__(self):
        return self.expr

    def __format__(self, spec):  # an f-string prints the expression
        return self.expr

    def __repr__(self):
        return f"Dim({self.expr!r})"

    def __mul__(self, other):
        if isinstance(other, int) and other == 1:
            return self
        return Dim(f"{_factor(self)} * {_factor(other)}")

    __rmul__ = __mul__

    def __eq__(self, other):
        return isinstance(other, Dim) and other.expr == self.expr

    def __hash__(self):
        return hash(self.expr)


def _factor(value):
    text = str(value)
    return f"({text})" if " " in text else text


def count(shape):
    """The number of elements of ``shape``: an int, or a Dim when a dim is one."""
    fixed, dynamic = 1, []
    for d in shape:
        if isinstance(d, Dim):
            dynamic.append(d)
        else:
            fixed *= int(d)
    if not dynamic:
        return fixed
    total = dynamic[0]
    for d in dynamic[1:]:
        total = total * d
    return total * fixed if fixed != 1 else total


def is_static(shape):
    return not any(isinstance(d, Dim) for d in shape)


class ScratchKey(tuple):
    """The key of an op's work buffer among the variables: a tuple, so that no variable
    of the program (whose names are strings, any strings) can take its place."""

    def __str__(self):
        return "scratch@" + ".".join(map(str, self))


def scratch_key(*where):
    return ScratchKey(where)


class StaticEnv:
    """Variables of one trace run: concrete shapes, plain pointers (the specialised path)."""

    dynamic = False

    def __init__(self, shapes, kinds, identifiers, index):
        self._shapes, self._kinds, self._identifiers = shapes, kinds, identifiers
        self._index = index
        self.used = []
        #: (source, out) of each copy_of line: out a copy of source and nothing more
        self.copies = []

    def scratch(self, count_, dtype, shared=False):
        """A work buffer of ``count_`` elements for this op (the compiled program owns it).
        ``shared``: one buffer of the type for every op that asks so, as large as the
        largest asks (the ops run one after another, and none keeps anything there)."""
        dtype = np.dtype(dtype)
        if shared:
            name = scratch_key("shared", dtype.name)
            held = self._shapes.get(name)
            count_ = max(int(count_), held[0][0] if held else 0)
            self._identifiers[name] = f"scratch_{dtype.name}"
        else:
            name = scratch_key(self._index)
            self._identifiers[name] = f"scratch_{self._index}"
        self._shapes[name] = ((int(count_),), dtype)
        return self.ptr(name)

    def shape(self, name):
        return self._shapes[name][0]

    def has(self, name):
        """Whether ``name`` had a tensor value in the trace run."""
        return name in self._shapes

    def ctype(self, name):
        dtype = self._shapes[name][1]
        if dtype not in CTYPES:
            raise NoEmitter(f"{name} is {dtype}, a type the runtime has no kernels for")
        return CTYPES[dtype]

    def kind(self, name):
        return self._kinds.get(name, "dense")

    def ptr(self, name):
        if name not in self._shapes:
            raise NoEmitter(f"{name} has no value in the trace run")
        if self.kind(name) != "dense":
            raise NoEmitter(f"{name} is a {self.kind(name)}, not a dense tensor")
        self.ctype(name)  # a type the runtime knows
        if name not in self.used:
            self.used.append(name)
        return self._identifiers[name]

    def resize(self, name, dims):
        """The lines that give ``name`` the dims ``dims`` (none: the buffer has them)."""
        return []

    def copy_of(self, source, out, count_):
        """The line writing ``out`` as a copy of ``source``'s ``count_`` elements, for an
        op whose other lines leave ``out`` as it is. The generator may give ``out`` the
        buffer of ``source`` where nothing tells them apart (``generate.shared_buffers``);
        the runtime's copy of a buffer onto itself does nothing."""
        self.copies.append((source, out))
        return f"copy({self.ptr(source)}, {self.ptr(out)}, {count_});"

    def same_shape(self, x, y):
        """Whether ``x`` and ``y`` have one shape."""
        return list(self.shape(x)) == list(self.shape(y))

    def dead(self, name):
        """Whether no one reads ``name`` (an emitter may leave it unwritten)."""
        return False

    def accumulator(self, name):
        """The total ``name`` is to be added into directly, or None."""
        return None

    def transposed(self, name):
        """The expression of parameter ``name``'s transpose made for this loop, or None."""
        return None

    def kernel_sets(self, *names):
        """(A specialised program's buffers have their dims already.)"""

    def resize_like(self, name, source):
        return []

    def tensor(self, name):
        raise NoEmitter("run-time tensors exist only in programs with LoD or sub-blocks")


class DynamicEnv:
    """Variables as run-time objects of the compiled program (see the module docstring).
    ``slots`` maps each name the op's block sees to its :class:`~.dynamic.Slot`;
    ``program`` is the generator, for what emitters of sub-block ops ask of it."""

    dynamic = True

    def __init__(self, slots, program, block, index, op):
        self._slots, self.program, self.block, self.index, self.op = \
            slots, program, block, index, op
        self.used = []
        self.sized = set()
        self.lod_set = set()
        #: lines the generator puts before the emitter's own (a scratch buffer's size)
        self.prologue = []

    @property
    def slots(self):
        """The names this op's block sees, and their slots."""
        return self._slots

    def use_slot(self, slot):
        """Bind a slot the emitter made (a record of its own) under its name."""
        self._slots[slot.name] = slot
        if slot.name not in self.used:
            self.used.append(slot.name)

    def slot(self, name):
        slot = self._slots.get(name)
        if slot is None:
            raise NoEmitter(f"{name} has no value the compiled code knows (declared nowhere "
                            f"above block {self.block})")
        if slot.kind == "SelectedRows":
            raise NoEmitter(f"{name} is a SelectedRows, not a dense tensor")
        if name not in self.used:
            self.used.append(name)
        return slot

    def scratch(self, count_, dtype, shared=False):
        """(Each op's own buffer, ``shared`` or not: sized at run time.)"""
        name = scratch_key(self.block, self.index)
        slot = self.program.scratch_slot(name, self.block, np.dtype(dtype))
        self._slots[name] = slot
        self.used.append(name)
        self.prologue += self.resize(name, [count_])
        return f"{slot.identifier}.data"

    def has(self, name):
        return name in self._slots and self._slots[name].kind == "dense"

    def shape(self, name):
        return self.slot(name).dims()

    def ctype(self, name):
        return self.slot(name).ctype

    def kind(self, name):
        slot = self._slots.get(name)
        return slot.kind if slot is not None else "dense"

    def ptr(self, name):
        slot = self.slot(name)
        if slot.kind != "dense":
            raise NoEmitter(f"{name} is a {slot.kind}, not a dense tensor")
        return f"{slot.identifier}.data"

    def copy_of(self, source, out, count_):
        """(Every tensor its own buffer here: the copy line alone.)"""
        return f"copy({self.ptr(source)}, {self.ptr(out)}, {count_});"

    def tensor(self, name):
        """The run-time object's expression (a Tensor, TensorArray or RankTable)."""
        return self.slot(name).identifier

    def resize(self, name, dims):
        slot = self.slot(name)
        self.sized.add(name)
        if slot.fixed:  # a parameter: a view of the scope's array, never resized
            return []
        return [f"{slot.identifier}.resize({{{', '.join(str(d) for d in dims)}}});"]

    def resize_like(self, name, source):
        slot = self.slot(name)
        self.sized.add(name)
        if slot.fixed or name == source:
            return []
        return [f"{slot.identifier}.resize_like({self.tensor(source)});"]

    def same_shape(self, x, y):
        """Whether ``x`` and ``y`` have one shape: the same literals, and run-time dims in
        the same places, which a check at run time then compares."""
        xs, ys = self.shape(x), self.shape(y)
        if len(xs) != len(ys) or any(isinstance(a, Dim) != isinstance(b, Dim)
                                     or (not isinstance(a, Dim) and a != b)
                                     for a, b in zip(xs, ys)):
            return False
        if not is_static(xs) and x != y:
            self.prologue.append(f"same_dims({self.tensor(x)}, {self.tensor(y)});")
        return True

    def dead(self, name):
        return name in self.program.dead

    def accumulator(self, name):
        """The expression of the total a while_grad sums ``name`` into over its steps, when
        the op writing ``name`` may add into it directly (its first step writes it)."""
        slot = self.program.accumulators.get(name)
        return f"{slot.home}.{slot.identifier}" if slot is not None else None

    def transposed(self, name):
        made = self.program.transposes.get((self.block, name))
        return f"{made.home}.{made.identifier}" if made is not None else None

    def kernel_sets(self, *names):
        """The kernel gives these outputs their dims and LoD (the generator adds neither a
        resize nor a share_lod line for them)."""
        for name in names:
            if name:
                self.sized.add(name)
                self.lod_set.add(name)
