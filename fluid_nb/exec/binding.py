"""Binding: a block's ops turned into steps, no-argument callables over a scope's holders.

Two stages keep repeated runs cheap:
- ``PreparedBlock(block, place)`` resolves each op's definition and kernel once;
- ``bind(prepared, scope, local, executor)`` turns it into one step per op. A step holds
  the holders of the op's inputs and outputs (``ScopeVariable``s, found once here), so
  running an op is one Python call plus its kernel: it reads the inputs' values, calls
  the kernel and stores what it returns in the output holders (an array as a LoDTensor
  with the LoD its output takes, see ``lod_sources``).

Which step an op gets (the step flavours of :mod:`.steps`) is decided here, once per op
(``make_step``): an op's own host step where its definition has one; else the general
step, or a faster flavour for a common shape of op (one runtime value in and out, runtime
values to one output, arrays to several, one array out as chains of ops are made of; each
flavour names the benchmark it pays for). ``bind_op`` binds a single op alone (live mode).
"""
import os
import threading

import numpy as np

from ..errors import Unimplemented
from ..framework.blocks import sub_block_indices
from ..framework.program import EMPTY_VAR_NAME, GRAD_SUFFIX
from ..ops import registry
from .. import flags
from ..tensor.dtypes import VarType, to_numpy_dtype
from ..tensor.place import CPUPlace
from .scope import ScopeVariable
from . import steps as flavours

#: counters tests read to prove work is not repeated
stats = {"plans_built": 0, "blocks_prepared": 0, "frames_bound": 0}


class KernelContext:
    """What a kernel sees besides its inputs: attributes, the array module, its place.

    Ops that run sub-blocks or touch the scope (feed, fetch, while) use ``scope``,
    ``executor`` and ``op``.
    """

    __slots__ = ("op", "attrs", "xp", "place", "executor", "scope", "_wanted", "program",
                 "cache", "unused", "donated")

    def __init__(self, op, place, executor, scope, wanted, unused=frozenset()):
        #: output names no later op of the run reads (temporaries dropped right after this
        #: op): an op running a sub-block need not produce them
        self.unused = unused
        #: per-op memo for values that depend on attributes alone (a constant's array)
        self.cache = {}
        #: input slots whose arrays the kernel may overwrite with their update (the op's
        #: ``in_place`` pairs whose input nothing else holds), set before each call
        self.donated = frozenset()
        self.op = op
        self.attrs = op.attrs
        self.place = place
        self.xp = place.xp
        self.executor = executor
        self.scope = scope
        self._wanted = wanted
        self.program = op.block.program

    def wants(self, slot):
        """True when the program binds output ``slot`` to a variable."""
        return slot in self._wanted

    def input_names(self, slot):
        return self.op.inputs.get(slot, [])

    def output_names(self, slot):
        return self.op.outputs.get(slot, [])

    def random_state(self, seed_attr="seed", seed=None):
        """A NumPy RandomState: from ``seed`` when given, else the op's ``seed`` attribute if
        non-zero, else the program's ``random_seed`` (advanced per call so repeated runs
        differ), else fresh entropy."""
        if seed is None:
            seed = (self.attrs.get(seed_attr, 0) or 0) if seed_attr else 0
        if seed:
            return _seeded(seed)
        program_seed = self.program.random_seed
        if program_seed:
            counter = getattr(self.program, "_seed_counter", 0)
            self.program._seed_counter = counter + 1
            return _seeded((program_seed * 1000003 + counter) % (2 ** 32))
        return _from_entropy()


# Making a RandomState costs about 300 µs (its generator first seeds itself from the
# system's entropy), seeding one again 3 µs, and a parameter's initializer draws once: so
# each thread keeps one to seed per draw, and one seeded from entropy whose stream draws
# without a seed go on with. A kernel draws from what random_state gave it before it asks
# for another.
_random_states = threading.local()


def _seeded(seed):
    """A RandomState in the state ``np.random.RandomState(seed)`` starts in."""
    state = getattr(_random_states, "seeded", None)
    if state is None:
        state = _random_states.seeded = np.random.RandomState()
    state.seed(seed)
    return state


def _from_entropy():
    """This thread's RandomState seeded from entropy (seeded again in a forked process, so
    that processes forked from one do not draw alike)."""
    pid = os.getpid()
    owned = getattr(_random_states, "entropy", None)
    if owned is None or owned[0] != pid:
        owned = _random_states.entropy = (pid, np.random.RandomState())
    return owned[1]


class PreparedOp:
    """An op with its definition, its kernel on a place and its index in its block."""

    __slots__ = ("op", "opdef", "kernel", "index", "_block_indices")

    def __init__(self, op, opdef, kernel, index):
        self.op, self.opdef, self.kernel, self.index = op, opdef, kernel, index
        self._block_indices = None

    def block_indices(self):
        """The indices of the blocks the op runs (``sub_block_indices``), found once: a
        plan's binding asks three times for each op (what is read after it, the last uses,
        what the run writes), and an op's attributes do not change while it is prepared
        (a change is a new program version, prepared again)."""
        found = self._block_indices
        if found is None:
            found = self._block_indices = sub_block_indices(self.op)
        return found


def prepare_op(op, device, index=None):
    """``op`` (the ``index``-th of its block, None when not known) as a PreparedOp on
    ``device`` ("cpu", "gpu"); Unimplemented for an op type fluid_nb has no definition
    of."""
    opdef = registry.find(op.type)
    if opdef is None:
        where = f"block {op.block.idx}" + (f", op {index}" if index is not None else "")
        raise Unimplemented(f"op '{op.type}' ({where}): a "
                            f"registered op type expected, but fluid_nb has no definition "
                            f"for it, so the program cannot run; it can still be "
                            f"inspected, saved and converted")
    return PreparedOp(op, opdef, opdef.kernel_for(device), index)


class PreparedBlock:
    """A block's ops with definitions and kernels resolved; independent of any scope."""

    def __init__(self, block, place):
        self.block = block
        self.place = place
        self.ops = [prepare_op(op, place.device, index) for index, op in enumerate(block.ops)]
        self.version = block.program._version
        stats["blocks_prepared"] += 1


# --- the plan-shaping memory flags -------------------------------------------------------
_policy = [None, (True, True)]  # (flags version read, (eager deletion, in-place updates))


def memory_policy():
    """(eager deletion, in-place updates): temporaries go at their last use unless Paddle's
    ``FLAGS_eager_delete_tensor_gb`` is negative, and update ops write parameters in place
    unless ``FLAGS_inplace_update`` is off. Read again only after set_flags; plans are
    keyed by it."""
    if _policy[0] != flags.version[0]:
        _policy[:] = [flags.version[0], (flags.flag("FLAGS_eager_delete_tensor_gb") >= 0,
                                         flags.flag("FLAGS_inplace_update"))]
    return _policy[1]


# --- a block -----------------------------------------------------------------------------
def bind(prepared, scope, local, executor, release=False, unwanted=None):
    """One step per op of ``prepared``, over holders found in ``scope`` (persistables and
    outer variables) and ``local`` (temporaries, created there when missing). With
    ``release``, each temporary's value is dropped after its last use. ``unwanted`` maps
    an op's index to output names nobody needs: its kernel is not asked for a slot whose
    names all are, and an op whose outputs all are does not run."""
    block = prepared.block

    def holder(name):
        found = local.find_var(name)
        if found is not None:
            return found
        var = block._find_var_recursive(name)
        if var is not None and var.persistable:
            return scope.var(name) if scope.find_var(name) is None else scope.find_var(name)
        return local.var(name)

    for var in block.vars.values():  # as Fluid: every declared variable exists before ops run
        if var.persistable:
            if scope.find_var(var.name) is None:
                scope.var(var.name)
        elif local.find_local_var(var.name) is None:
            local.var(var.name)

    if release:  # a run's temporaries go at their last use: one nothing reads need not be
        unwanted = {**_unread_gradients(prepared, local), **(unwanted or {})}  # made
        dead_after = _last_uses(prepared, local, unwanted)
    else:
        dead_after, unwanted = {}, unwanted or {}
    steps = []
    for i, p in enumerate(prepared.ops):
        dead = dead_after.get(i, ())
        unused = frozenset(dead).intersection(p.op.output_arg_names) if dead else frozenset()
        steps.append(make_step(p, holder, prepared.place, executor, local,
                               tuple(local.vars[n] for n in dead), unused,
                               unwanted.get(i, frozenset())))
    return steps


#: the ``op_role`` bit of the ops append_backward adds (Paddle's ``OpRole.Backward``)
_OP_ROLE_BACKWARD = 1


def _unread_gradients(prepared, local):
    """op index -> its outputs, for each gradient op (``op_role`` Backward) of a run all of
    whose outputs are the run's temporaries (in ``local``) that no op running after it
    reads (directly, or in a sub-block), so that the op need not run: the gradient of a
    loop's input array that nothing takes further, say, which Fluid computes as well. An
    op that only fed such ops is one too. Forward ops, ops with state (``stateful``: random
    draws, prints, files, messages) and ops with sub-blocks always run."""
    program = prepared.block.program
    temporaries = local.vars
    read = set()
    unread = {}
    for index in range(len(prepared.ops) - 1, -1, -1):
        p = prepared.ops[index]
        op = p.op
        outputs = [n for n in op.output_arg_names if n != EMPTY_VAR_NAME]
        sub_blocks = p.block_indices()
        if outputs and int(op.attrs.get("op_role", 0) or 0) & _OP_ROLE_BACKWARD \
                and (p.opdef is None or "stateful" not in p.opdef.traits) \
                and not sub_blocks \
                and all(n in temporaries and n not in read for n in outputs):
            unread[index] = frozenset(outputs)
            continue
        read.update(op.input_arg_names)
        for idx in sub_blocks:
            read |= names_in_block(program.block(idx), writes=False)
    return unread


def _last_uses(prepared, local, skipped=()):
    """op index -> temporaries no later op reads, so their values can go right after it.

    As Paddle's eager deletion: a run's temporaries are dropped at its end anyway, so
    freeing each at its last use changes nothing visible and keeps memory hot. Names used
    inside an op's sub-blocks count as used by that op.
    """
    last = {}
    program = prepared.block.program
    for index, p in enumerate(prepared.ops):
        if index in skipped:  # (an op that does not run reads nothing)
            continue
        names = set(p.op.input_arg_names) | set(p.op.output_arg_names)
        for idx in p.block_indices():
            names |= names_in_block(program.block(idx))
        for name in names:
            last[name] = index
    dead = {}
    for name, index in last.items():
        if name in local.vars:
            dead.setdefault(index, []).append(name)
    return dead


def names_in_block(block, writes=True):
    """Every name the ops of ``block`` and of the blocks nested in them read, and (unless
    ``writes`` is False) write."""
    names = set()
    for op in block.ops:
        names.update(op.input_arg_names)
        if writes:
            names.update(op.output_arg_names)
        for idx in sub_block_indices(op):
            names |= names_in_block(block.program.block(idx), writes)
    return names


# --- one op alone --------------------------------------------------------------------------
def bind_op(op, scope, executor, holder=None):
    """``(step, prepared op)`` for running ``op`` alone over ``scope``: ``step()`` reads the
    op's inputs from their holders, runs its kernel on ``executor.place`` and stores its
    outputs in their holders, as the op would inside a run (its host step where it has
    one; no value is dropped after it).

    ``holder(name)`` gives each argument's holder (default: the one ``scope`` or an
    ancestor has, else a new one in ``scope``). Nothing is created before the op's
    definition is found: an unknown op type raises Unimplemented with ``scope`` as it was.
    Errors of the step itself are the kernel's own; ``run_loop.op_error`` makes them the
    typed error that names the op (``Executor.run_op`` does both)."""
    prepared = prepare_op(op, executor.place.device, None)
    if holder is None:
        def holder(name):
            found = scope.find_var(name)
            return found if found is not None else scope.var(name)
    return make_step(prepared, holder, executor.place, executor, scope), prepared


# --- one op's step ---------------------------------------------------------------------
_HOST = CPUPlace()


def make_step(prepared_op, holder, place, executor, scope, dead=(), unused=frozenset(),
              unwanted=frozenset()):
    """The step of one op: holders found through ``holder(name)``; ``dead`` holders emptied
    after it; ``unused`` outputs nobody reads later; ``unwanted`` outputs not computed."""
    if place.device != "cpu":
        op, opdef = prepared_op.op, prepared_op.opdef
        if op.attrs.get("force_cpu") is True or "host_output" in opdef.traits:
            # Paddle's force_cpu, and ops whose Paddle kernel is the host's (a rank table's
            # max_sequence_len, an array's length): the output lives on the host whatever
            # the place, so the loop counters and conditions they feed need no device copy
            place = _HOST
        elif opdef.kernel_place_of is not None and op.inputs.get(opdef.kernel_place_of):
            return _following_step(prepared_op, holder, place, executor, scope, dead, unused,
                                   unwanted)
    return _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted)


def _following_step(prepared_op, holder, place, executor, scope, dead, unused, unwanted):
    """On a device place, the step of an op whose kernel runs where its input
    ``opdef.kernel_place_of`` lives (Paddle's increment): on the host for a host counter."""
    source = holder(prepared_op.op.inputs[prepared_op.opdef.kernel_place_of][0])
    on_device = _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted)
    on_host = _step_on(prepared_op, holder, _HOST, executor, scope, dead, unused, unwanted)

    def step():
        array = getattr(source.value, "array", None)
        (on_host if array.__class__ is np.ndarray else on_device)()
    return step


def _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted):
    """The op's host step on the host where its definition has one (the loop's machinery:
    W3 takes 1.21x without them), else the step that calls its kernel."""
    op, opdef, fn = prepared_op.op, prepared_op.opdef, prepared_op.kernel
    wanted = _wanted(op, unwanted)
    ctx = KernelContext(op, place, executor, scope, wanted, unused)
    if fn is None or (unwanted and not wanted):  # markers; ops nobody needs
        return flavours.releasing(flavours.noop, dead)
    ins, outs = _slot_holders(op, opdef, holder)
    if opdef.host_step is not None and place.device == "cpu" and len(outs) == 1 \
            and outs[0].__class__ is ScopeVariable and getattr(executor, "host_steps", True):
        kernel_step = _kernel_step(fn, ctx, op, opdef, ins, outs, holder, dead)
        return flavours.releasing(opdef.host_step(ctx, ins, outs[0], kernel_step), dead)
    if place.device != "cpu" and not opdef.lod_aware:
        fn = _on_device(fn, place.xp)
    return _kernel_step(fn, ctx, op, opdef, ins, outs, holder, dead)


def once_step(op, opdef, fn, holder, place, executor, scope):
    """The step of ``op`` (its definition ``opdef``, its host kernel ``fn``) for a single run
    on the host, a live op's first: the general step over its holders (``holder(name)``),
    as ``make_step`` binds it but without the op's host step, the faster flavours or an
    in-place update. Each of those buys its gain over many runs and costs about a run to
    choose; each computes what the general step computes. None for an op without a kernel
    or off the host (``make_step`` binds those)."""
    if fn is None or place.device != "cpu":
        return None
    ctx = KernelContext(op, place, executor, scope, _wanted(op))
    ins, outs = _slot_holders(op, opdef, holder)
    return flavours.general(fn, ctx, opdef, ins, outs, _lod_sources(op, opdef, holder), ())


def _wanted(op, unwanted=frozenset()):
    """The output slots of ``op`` that name a variable outside ``unwanted``."""
    return frozenset(slot for slot, args in op.outputs.items()
                     if args and any(a != EMPTY_VAR_NAME and a not in unwanted for a in args))


def _slot_holders(op, opdef, holder):
    """``(input holders, output holders)``, one entry per slot of the definition, in its
    order (see :func:`_input_holders`, :func:`_output_holders`)."""
    given, made = op.inputs.get, op.outputs.get
    return ([_input_holders(given(slot.name), slot.duplicable, holder)
             for slot in opdef.inputs],
            [_output_holders(made(slot.name), slot.duplicable, holder)
             for slot in opdef.outputs])


def _input_holders(args, duplicable, holder):
    """An input slot's holders: None when absent, a list for a duplicable slot."""
    if not args:
        return None
    return [holder(a) for a in args] if duplicable else holder(args[0])


def _output_holders(args, duplicable, holder):
    """An output slot's holders: None when absent or given only empty names, a list for a
    duplicable slot (None for its empty names)."""
    if not args or all(a == EMPTY_VAR_NAME for a in args):
        return None
    if duplicable:
        return [holder(a) if a != EMPTY_VAR_NAME else None for a in args]
    return holder(args[0])


def _kernel_step(fn, ctx, op, opdef, ins, outs, holder, dead):
    """The step that calls the op's kernel: the general step, or the flavour that runs the
    op's shape faster. A flavour stays only while it buys 3% of a benchmark (the plain
    step's closure for an absent second input, under 1%, was folded)."""
    lod_sources = _lod_sources(op, opdef, holder)
    donors = _donors(op, opdef, ins, dead)
    if donors:  # memory, not speed: memory.py's W2 step peak 9.3 -> 5.4 MB
        return flavours.donating(flavours.general(fn, ctx, opdef, ins, outs, lod_sources,
                                                  dead), ctx, donors)
    single_slots = not any(h.__class__ is list for h in ins + outs)
    if opdef.lod_aware and len(outs) == 1 and outs[0] is not None \
            and outs[0].__class__ is not list and 0 not in lod_sources:
        if len(ins) == 1 and ins[0] is not None and single_slots and not dead:
            # runtime: feed/fetch, op_overhead's fixed cost of a run +3-7% without it
            return flavours.runtime(fn, ctx, ins[0], outs[0])
        # values: W3 (dynamic_rnn.py) +3-5% without it, its two-gradient sum included
        return flavours.releasing(flavours.values(fn, ctx, ins, outs[0]), dead)
    if not opdef.lod_aware and len(outs) > 1 and single_slots and ins:
        # arrays: the grad ops' several outputs, W3 (dynamic_rnn.py) +3% without it
        return flavours.arrays(fn, ctx, ins, outs, lod_sources, dead)
    # plain: op_overhead's 1,000-op chain takes 1.7-1.8x (1x1) and 1.4-1.5x (64x64) per op
    # without it, W1 +2-11%
    if not opdef.lod_aware and len(outs) == 1 and outs[0].__class__ is ScopeVariable \
            and "runtime_outputs" not in opdef.traits \
            and not any(h.__class__ is list for h in ins) and _leading_present(ins) > 0:
        return flavours.plain(fn, ctx, ins, outs[0], lod_sources.get(0), dead)
    return flavours.general(fn, ctx, opdef, ins, outs, lod_sources, dead)


def _leading_present(ins):
    """How many inputs come before the first absent one (absent ones must all trail)."""
    count = 0
    for h in ins:
        if h is None:
            break
        count += 1
    return count if all(h is None for h in ins[count:]) else -1


def _lod_sources(op, opdef, holder):
    """output position -> the holder (a list, for a duplicable slot of a grad op) whose
    value's LoD that output takes when the step runs. The op's ``share_lod`` names one
    input for some outputs; otherwise, as Paddle's grad ops do (``ShareLoD(X, X@GRAD)``
    in their shape inference), each input's gradient takes that input's LoD."""
    sources = {}
    if opdef.share_lod is not None:
        source_slot = opdef.share_lod[0]
        args = op.inputs.get(source_slot)
        if args:
            source = holder(args[0])
            for index in shared_lod_outputs(opdef):
                sources[index] = source
        return sources
    if not takes_grad_lod(opdef):
        return sources
    for index, slot in enumerate(opdef.outputs):
        if not slot.name.endswith(GRAD_SUFFIX):
            continue
        forward = op.inputs.get(slot.name[:-len(GRAD_SUFFIX)])
        if not forward or not op.outputs.get(slot.name):
            continue
        holders = [holder(name) for name in forward]
        sources[index] = holders if slot.duplicable else holders[0]
    return sources


def shared_lod_outputs(opdef):
    """The positions of the outputs that take the LoD of the input the op's ``share_lod``
    names (its first argument's, in a duplicable slot)."""
    targets = opdef.share_lod[1] if opdef.share_lod is not None else ()
    return [index for index, slot in enumerate(opdef.outputs) if slot.name in targets]


def takes_grad_lod(opdef):
    """Whether each ``<input>@GRAD`` output of the op takes its input's LoD (a grad op of
    array kernels without a ``share_lod``)."""
    return opdef.share_lod is None and opdef.type.endswith("_grad") and not opdef.lod_aware


# --- in-place updates ----------------------------------------------------------------------
#: the smallest variable (declared bytes) worth updating in place: below it a new array
#: costs less than checking that the old one may be written
DONATE_MIN_BYTES = 64 << 10


def _donors(op, opdef, ins, dead=()):
    """(input slot, holder) of the op's ``in_place`` pairs whose output names the same
    variable as the input, and of its ``reuses`` pairs whose input holder is among ``dead``
    (the run's temporaries dropped right after the op), each a variable of at least
    DONATE_MIN_BYTES."""
    if not (opdef.in_place or opdef.reuses) or not memory_policy()[1]:
        return ()
    position = {slot.name: i for i, slot in enumerate(opdef.inputs)}
    donors = []
    for pairs, reused in ((opdef.in_place, False), (opdef.reuses, True)):
        for out_slot, in_slot in pairs.items():
            out_args, in_args = op.outputs.get(out_slot), op.inputs.get(in_slot)
            holder = ins[position[in_slot]]
            if out_args and in_args and len(out_args) == len(in_args) == 1 \
                    and holder.__class__ is ScopeVariable \
                    and (any(holder is h for h in dead) if reused
                         else out_args[0] == in_args[0]) \
                    and _declared_bytes(op.block._find_var_recursive(in_args[0])) \
                    >= DONATE_MIN_BYTES:
                donors.append((in_slot, holder))
    return tuple(donors)


def _declared_bytes(var):
    """A variable's size from its declaration (0 when unknown or not a tensor)."""
    if var is None or var.type != VarType.LOD_TENSOR or not var.shape \
            or any(d < 0 for d in var.shape):
        return 0
    count = 1
    for d in var.shape:
        count *= d
    return count * np.dtype(to_numpy_dtype(var.dtype)).itemsize


# --- device places -----------------------------------------------------------------------
def _on_device(fn, xp):
    """An array kernel on a device place, given its host inputs (a force_cpu constant, a
    host counter) moved to the device first, as Paddle's data transform moves a kernel's
    inputs to its place: a copy to the device, never back."""
    def kernel(ctx, *args):
        return fn(ctx, *[_to_device(a, xp) for a in args])
    return kernel


def _to_device(value, xp):
    if value.__class__ is np.ndarray:
        return xp.asarray(value)
    if value.__class__ is list:
        return [_to_device(v, xp) for v in value]
    return value
