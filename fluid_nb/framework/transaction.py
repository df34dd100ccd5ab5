"""Layer calls as transactions: a layer (or optimizer, backward pass, control-flow block)
that fails leaves the main and startup programs as they were.

``Block.append_op`` is already all-or-nothing for one op; a layer adds several things
(parameters and their startup initializers, temporaries, ops, sub-blocks), and a check in its
third op used to leave the first two behind. :func:`transactional` wraps the public entry
points once; :func:`atomic` is the same for ``with`` blocks. Layers only ever append (ops at
the end of a block, variables at the end of its dict, blocks at the end of the program), so a
snapshot is a few lengths per block and rolling back is truncating to them. Nested calls (a
layer calling layers) share the outermost transaction.

Unique-name counters are restored too: after a failed ``fc`` the next one is still ``fc_0``,
as if the failed call had not happened (Paddle advances them; nothing depends on the gap).
The generator logs the names it hands out while a transaction is open, and variables say
when they are made inside one, so that the bookkeeping of a call that succeeds is a few
lengths and an empty log, whatever the size of the program.

In live mode the session also forgets what the failed call ran: values of the removed
variables leave the live scope, removed ops leave its queues and caches.
"""
import functools
import sys

from . import program as _fw  # (program imports this module: attributes read at call time)
from . import annotations as _annotations
from . import unique_name
from .callstack import _op_record

_depth = 0
#: while a transaction is open: id(variable) -> (variable, its fields before the first change
#: in place), for variables that shape inference changed (they may predate the transaction)
journal = None


def note_change(var):
    """Keep ``var``'s fields before the open transaction changes them in place."""
    key = id(var)
    if key not in journal:
        journal[key] = (var, dict(var.__dict__))


def _program_state(program):
    """(program, block count, current block, op count and variable count of each block):
    the lengths that say what a program held (blocks are only appended, so the first ones
    are still the same blocks when the state is restored)."""
    blocks = program.blocks
    if len(blocks) == 1:  # most programs: one flat tuple, no loop
        block = blocks[0]
        return (program, 1, program.current_block_idx, len(block.ops), len(block.vars))
    state = [program, len(blocks), program.current_block_idx]
    for block in blocks:
        state += (len(block.ops), len(block.vars))
    return tuple(state)


def _changed(state):
    program, n_blocks, current = state[:3]
    if len(program.blocks) != n_blocks or program.current_block_idx != current:
        return True
    return any(len(block.ops) != state[3 + 2 * i] or len(block.vars) != state[4 + 2 * i]
               for i, block in enumerate(program.blocks))


def _truncate(state):
    """Truncate a program back to ``state``; returns (removed ops, removed variable names)."""
    program, n_blocks, current = state[:3]
    removed_ops, removed_vars = [], []
    for block in program.blocks[n_blocks:]:
        removed_ops.extend(block.ops)
        removed_vars.extend(block.vars)
    del program.blocks[n_blocks:]
    for i, block in enumerate(program.blocks):
        n_ops, n_vars = state[3 + 2 * i], state[4 + 2 * i]
        removed_ops.extend(block.ops[n_ops:])
        del block.ops[n_ops:]
        for name in list(block.vars)[n_vars:]:
            removed_vars.append(name)
            del block.vars[name]
    program.current_block_idx = current
    program._plans.clear()
    program._changed()
    return removed_ops, removed_vars


def _open(programs):
    """Open the outermost transaction over ``programs`` (default: the default main and
    startup programs): their states, and from now on a log of the unique names handed out.
    Returns what :func:`_close` needs."""
    global _depth, journal
    if not programs:
        states = (_program_state(_fw._main_program), _program_state(_fw._startup_program))
    elif len(programs) == 2 and programs[0] is programs[1]:
        states = (_program_state(programs[0]),)
    else:
        states = tuple(_program_state(p) for p in programs)
    generator = unique_name._generator
    generator.undo = []
    _depth, journal = 1, {}
    return states, generator


def _close(opened, failed):
    """Close the outermost transaction; when it ``failed``, restore what it changed."""
    global _depth, journal
    states, generator = opened
    changed_vars = journal
    _depth, journal = 0, None
    undo, generator.undo = generator.undo, None
    if failed:
        _restore(states, generator, undo, changed_vars)


def _restore(states, generator, undo, changed_vars):
    for fields_of in changed_vars.values():
        if fields_of is not None:  # None: made inside the transaction, removed below
            var, fields = fields_of
            var.__dict__.clear()
            var.__dict__.update(fields)
    for state in states:
        if _changed(state):
            removed_ops, removed_vars = _truncate(state)
            _forget_in_live_session(state[0], removed_ops, removed_vars)
    unique_name.switch(generator)
    generator.take_back(undo)


def _forget_in_live_session(program, removed_ops, removed_vars):
    session = getattr(program, "_live_session", None)
    if session is None or not (removed_ops or removed_vars):
        return
    gone = set(removed_ops)
    session.update_ops = [op for op in session.update_ops if op not in gone]
    session.pending = [op for op in session.pending if op not in gone]
    for name in removed_vars:
        session.scope.vars.pop(name, None)
    kept = {op for block in session.program.blocks for op in block.ops}
    kept.update(op for block in session.startup_program.blocks for op in block.ops)
    session.forget_ops(kept)


_ONE = frozenset((1,))


def _append_one_op(block, op_type, inputs, attrs, dtype, layer_type=None):
    """Append ``op_type`` with ``inputs`` (slot -> a tuple of variable names, the form an
    op keeps: one each, but for a layer joining several, as concat) and ``attrs``, its
    ``Out`` a fresh temporary of ``dtype`` named
    ``<layer_type>_<n>.tmp_<m>`` (``tmp_<n>`` without ``layer_type``), and return the
    temporary: all or nothing, as a transaction would make it, without taking a
    transaction's snapshot of both programs.

    The layers that append one op (the elementwise and activation layers, a Variable's
    ``+``) are most of what a live cell appends: ``append_op`` is all or nothing already,
    so what such a layer must undo itself is the temporary and its names. Their arguments
    are in the form an op keeps, so a defined op skips append_op's argument forms.

    ``append_one_op`` is ``_op_record.append_one_op``: this function's common case in C (a
    formula op, or one with a plain kernel, outside any transaction, every memo the calls
    before filled holding its answer: see ``_op_record.c``), this function for every other
    call."""
    generate = unique_name._generator
    name = generate.temporary(layer_type) if layer_type else generate("tmp")
    made = name not in block.vars
    out = block._create_temporary(name, dtype)
    # (a type not loaded yet is loaded here; an unknown one appends untyped, as append_op
    # would)
    spec = _fw._op_defs.get(op_type) or _fw._op_registry().find(op_type)
    try:
        # (the op's stack starts at the layer, as the C path's does)
        block._append_args(spec, op_type, inputs, {"Out": (name,)}, attrs,
                           _ONE.issuperset(map(len, inputs.values())), (), None, True, 3)
    except BaseException:
        if not _depth:  # (an open transaction undoes all of it itself)
            _take_back_temporary(block, name, made, layer_type, generate)
        raise
    return out


def _append_with_xshape(block, op_type, x, attrs, layer_type):
    """Append ``op_type`` (reshape2, transpose2, squeeze2, unsqueeze2, flatten2: X in, Out
    and the XShape its gradient reads out) on the variable ``x`` with ``attrs``; its outputs
    two fresh temporaries of ``x``'s dtype named as ``LayerHelper(layer_type)`` names them,
    ``<layer_type>_<n>.tmp_0`` and ``.tmp_1``; returns Out. All or nothing as
    :func:`_append_one_op` is, without a transaction's snapshot of both programs: the
    layers that reshape a value (a Transformer appends dozens) are lean layers.

    ``append_with_xshape`` is ``_op_record.append_with_xshape``: this function's common
    case in C (outside any transaction, the op's memos holding this call's answers, as
    for ``append_one_op``), this function for every other call."""
    fresh = [(x.dtype, False)]
    return _fresh(block, op_type, {"X": (x.name,)}, {"Out": fresh, "XShape": fresh}, attrs,
                  layer_type)["Out"][0]


def append_fresh(block, op_type, inputs, outputs, attrs, layer_type, slot_order=None):
    """Append ``op_type`` with ``inputs`` (slot -> tuple of names) and ``attrs``, its
    ``outputs`` fresh temporaries, ``outputs`` mapping each slot to a list of ``(dtype,
    stop_gradient)``, one per variable (a duplicable slot, ``split``'s, several): named in
    that order as ``LayerHelper(layer_type)`` names them (``<layer_type>_<n>.tmp_<m>``,
    ``.tmp_<m + 1>``, ...), the op's output slots in ``slot_order`` (``outputs``' order by
    default); returns slot -> the list of its variables. All or nothing as
    :func:`_append_one_op` is, without a transaction's snapshot of both programs: the
    layers of one op of several outputs (``split``, ``topk``, ``dropout``, ...)."""
    return _fresh(block, op_type, inputs, outputs, attrs, layer_type, slot_order)


def append_after(block, appended, op_type, inputs, out_dtype, attrs, layer_type):
    """Append ``op_type`` after a layer's one-op appends ``appended`` (as
    :func:`take_back_appended` takes them), its Out a fresh temporary of ``out_dtype`` named
    as the same ``LayerHelper(layer_type)`` names its next one (``<layer_type>_<n>.tmp_<m>``
    of the helper's ``n``): a layer's second op (an ``act=`` after an elementwise op,
    ``square`` after ``elementwise_sub``). All or nothing with the appends before it: a
    refused op takes back its temporary and theirs. Returns Out."""
    helper = unique_name._generator.ids[layer_type] - 1
    try:
        return _fresh(block, op_type, inputs, {"Out": [(out_dtype, False)]}, attrs, layer_type,
                      None, helper)["Out"][0]
    except BaseException:
        take_back_appended(block, appended)
        raise


def _fresh(block, op_type, inputs, outputs, attrs, layer_type, slot_order=None, helper=None):
    """:func:`append_fresh`, called by it, :func:`_append_with_xshape` or
    :func:`append_after` (the op's stack starts at their caller, the layer); ``helper``: the
    number of the layer's helper whose temporaries these continue (None: a new helper's)."""
    generate = unique_name._generator
    ids = generate.ids
    n = ids.get(layer_type, 0)  # (a helper's own: its counter stays, and is restored as is)
    key = f"{generate.prefix}{layer_type}_{n if helper is None else helper}.tmp"
    m = ids.get(key, 0)
    made, variables, names = [], {}, {}
    first = helper is None
    for slot, specs in outputs.items():
        slot_vars = variables[slot] = []
        for dtype, stop_gradient in specs:
            name = generate.temporary(layer_type) if first else generate(key)
            first = False
            if name not in block.vars:
                made.append(name)
            var = block._create_temporary(name, dtype)
            if stop_gradient:
                var.stop_gradient = True
            slot_vars.append(var)
        names[slot] = tuple(var.name for var in slot_vars)
    if slot_order is not None:
        names = {slot: names[slot] for slot in slot_order}
    spec = _fw._op_defs.get(op_type) or _fw._op_registry().find(op_type)
    single = _ONE.issuperset(map(len, inputs.values())) and \
        _ONE.issuperset(map(len, names.values()))
    try:
        # (the op's stack starts at the layer, as the C path's does)
        block._append_args(spec, op_type, inputs, names, attrs, single, (), None, True, 4)
    except BaseException:
        if not _depth:  # (an open transaction undoes all of it itself)
            _take_back_temporaries(block, made, layer_type, generate, n, m, key)
        raise
    return variables


def _take_back_temporaries(block, made, layer_type, generator, n, m, key=None):
    """Remove the temporaries ``made`` of a failed append_with_xshape (append_fresh) and
    give back the names it took (``layer_type``'s counter was ``n``, its ``.tmp`` counter,
    ``key``, ``m``; ``key`` by default that of helper ``n``)."""
    for name in made:
        block._remove_var(name)
    _forget_in_live_session(block.program, (), tuple(made))
    if key is None:
        key = f"{generator.prefix}{layer_type}_{n}.tmp"
    generator.take_back([(layer_type, n), (key, m)])


def _take_back_temporary(block, name, made, layer_type, generator):
    # no undo log while a one-op append succeeds: a failure takes back the temporary (when
    # it made it) and the name it took
    if made:
        block._remove_var(name)
        _forget_in_live_session(block.program, (), (name,))
    generator.take_back_temporary(layer_type or None)


def _take_back_with_xshape(block, op, name, xshape_name, layer_type, generator, n, m):
    """What a failed append_with_xshape of the C path takes back when the program's append
    hook raised: the op, as ``Block._append_args`` takes it back, then both temporaries and
    their names, as :func:`_append_with_xshape` does."""
    _take_back_fresh(block, op, (name, xshape_name), layer_type, generator, n, m)


def _take_back_fresh(block, op, made, layer_type, generator, n, m):
    """What a failed append_fresh (append_with_xshape) of the C path takes back when the
    program's append hook raised: the op, as ``Block._append_args`` takes it back, then the
    temporaries ``made`` and their names, as :func:`_fresh` does."""
    block.ops.remove(op)
    block.program._changed()
    _take_back_temporaries(block, made, layer_type, generator, n, m)


def _take_back_one_op(block, op, name, layer_type, generator):
    """What a failed :func:`append_one_op` of the C path takes back when the program's append
    hook (a live session running the op) raised: the op, as ``Block._append_args`` takes it
    back, then its temporary and name, as :func:`_append_one_op` does."""
    block.ops.remove(op)
    block.program._changed()
    _take_back_temporary(block, name, True, layer_type, generator)


def fresh_names(block, layer_type, count):
    """The names the next ``append_fresh`` of ``layer_type`` gives its ``count`` temporaries
    that no variable of ``block`` holds yet (the ones it will make): what a layer passes to
    :func:`take_back_fresh` when its next op may be refused."""
    generator = unique_name._generator
    key = f"{generator.prefix}{layer_type}_{generator.ids.get(layer_type, 0)}.tmp"
    m = generator.ids.get(key, 0)
    return tuple(name for name in (f"{generator.prefix}{key}_{m + i}" for i in range(count))
                 if name not in block.vars)


def take_back_fresh(block, made, layer_type, count):
    """Take back the last :func:`append_fresh` of ``block`` (of ``layer_type``, ``count``
    temporaries, ``made`` the ones it made: :func:`fresh_names` before it): its op, the
    block's last, the temporaries it made and its names. A layer whose next op was refused
    (``accuracy``'s after its ``top_k``). Inside a transaction, which undoes all of it
    itself, nothing."""
    if _depth:
        return
    generator = unique_name._generator
    n = generator.ids[layer_type] - 1
    key = f"{generator.prefix}{layer_type}_{n}.tmp"
    _take_back_fresh(block, block.ops[-1], made, layer_type, generator, n,
                     generator.ids[key] - count)


def take_back_appended(block, appended):
    """Take back ``appended``: (op, its output's name, the layer type it was named for) of
    one-op appends a layer made in a row (``append_one_op``'s, oldest first), newest first,
    as each would take itself back: a layer of several such appends whose last was
    refused. Inside a transaction, which undoes all of it itself, nothing."""
    if _depth:
        return
    generator = unique_name._generator
    for op, name, layer_type in reversed(appended):
        _take_back_one_op(block, op, name, layer_type, generator)


append_one_op = _op_record.append_one_op
append_with_xshape = _op_record.append_with_xshape
#: ``append_fresh``'s common case in C (no transaction, one name a slot, its inference
#: remembered: see ``_op_record.c``); the function above, kept as ``_append_fresh``, for
#: every other call, and the definition
_append_fresh, append_fresh = append_fresh, _op_record.append_fresh


def replayed(layer, layers_globals):
    """``layer`` with its repeated calls replayed in C (``_op_record.OneOpCall``'s
    REPEATED): for a checked layer that appends one op on its first argument through
    ``append_one_op`` (of ``layers_globals``, its module's), the same op for the same
    arguments, or raises. A call whose arguments (scalars, or lists or tuples of them) and
    first argument's shape, dtype, LoD level and type equal an earlier call's appends what
    that call gave ``append_one_op``, without the checks it passed or the layer's frames;
    ``layer`` answers every other call, and stays the definition."""
    return _op_record.OneOpCall(layer, _op_record.REPEATED, layer.__name__, layers_globals)


def created(layer, layers_globals, state=None):
    """``layer`` with its repeated calls replayed in C (``_op_record.OneOpCall``'s CREATED):
    :func:`replayed` for a checked layer that appends one op of no input through
    ``append_one_op`` (``fill_constant``, ``uniform_random``), keyed by its arguments and
    by ``state()``, what else its record reads (None: nothing)."""
    return _op_record.OneOpCall(layer, _op_record.CREATED, layer.__name__, layers_globals,
                                state=state)
_op_record.configure_one_op(_append_one_op, _take_back_one_op, _append_with_xshape,
                            _take_back_with_xshape, _append_fresh, _take_back_fresh, _fw,
                            sys.modules[__name__],
                            unique_name, _annotations)


def lean(fn):
    """Mark ``fn`` as a layer that keeps itself all or nothing (it appends through
    :func:`append_one_op`, or opens :func:`atomic` where it does more), so
    :func:`wrap_module` leaves it as it is."""
    fn.__wrapped_transaction__ = True
    return fn


class _Transaction:
    """The context manager behind :func:`atomic` (``with`` blocks)."""
    __slots__ = ("programs", "opened")

    def __init__(self, programs=()):
        self.programs = programs
        self.opened = None

    def __enter__(self):
        if not _depth:
            self.opened = _open(self.programs)

    def __exit__(self, exc_type, exc, tb):
        if self.opened is not None:
            opened, self.opened = self.opened, None
            _close(opened, exc_type is not None)
        return False


def transactional(fn):
    """Wrap a layer-like function: if it raises, the programs are restored (see the module
    docstring). A call inside another transactional call adds no work of its own."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _depth:
            return fn(*args, **kwargs)
        # no context manager object here: this runs around every layer call
        opened = _open(())
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            _close(opened, True)
            raise
        _close(opened, False)
        return result
    call.__wrapped_transaction__ = True
    return call


def transactional_on(programs_of):
    """:func:`transactional` over the programs ``programs_of(*args, **kwargs)`` names (the
    loss's program for ``append_backward``, not the default one)."""
    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if _depth:
                return fn(*args, **kwargs)
            with _Transaction(programs_of(*args, **kwargs)):
                return fn(*args, **kwargs)
        return call
    return decorate


def atomic(*programs):
    """The body of a ``with`` block as one transaction over ``programs`` (default: the
    default main and startup programs); control-flow blocks and ``minimize`` use it."""
    return _Transaction(programs)


def wrap_module(module, names):
    """Make each public function ``names`` of ``module`` transactional, in place (calls
    through the module's own globals go through the wrapper too)."""
    for name in names:
        value = getattr(module, name, None)
        if callable(value) and not isinstance(value, type) and \
                not getattr(value, "__wrapped_transaction__", False):
            setattr(module, name, transactional(value))
