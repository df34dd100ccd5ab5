"""Hostile-input corpus, memory: the arguments of ``fluid.memory``'s functions, frees of
addresses ``alloc`` never gave out (a parameter's block, a fetched array, a place inside a
block, a block freed already), the memory flags' values, and a training step that runs out
of memory after each of its ops under several optimizers. Each is refused with a typed
error that says what was expected, with the arena, the flags and every persistable of the
scope as they were; a valid call works."""
import math

import numpy as np

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.memory import places

from tests.errors.corpus import Case, scope_state
from tests.errors.hostile import executed_marker, family_test
from tests.memory.steps import (CPU, FailAfter, OPTIMIZERS, batch, give_back, model,
                                restore_flags, small_arena)

FAMILY = "memory"
FUNCTIONS = ("alloc", "free", "used", "peak", "reset_peak", "stats", "release", "blocks",
             "holders", "events", "arena_of", "record_events")


class Payload:
    """An argument whose every hook tries to leave the marker file: none may run."""

    def __init__(self, marker):
        self._marker = str(marker)

    def _leave_mark(self, *args, **kwargs):
        with open(self._marker, "w") as out:
            out.write("ran")
        return 8

    __index__ = __int__ = __repr__ = __str__ = __len__ = __bool__ = _leave_mark

    def __getattr__(self, name):
        self._leave_mark()
        return "cpu"


def arena_state():
    """What a refused call must leave as it was: the arena's blocks and the flags."""
    arena = fluid.memory.arena_of(CPU)
    return (arena.used, tuple(sorted(arena.used_blocks())), dict(flags._values),
            places.host_arena().limit)


def _args(function, place=CPU, size=256, address=None, scope=None):
    """Arguments for one of FUNCTIONS, with one of them replaced."""
    if function == "alloc":
        return (place, size)
    if function == "free":
        return (place, address)
    if function == "holders":
        return (place, scope)
    if function == "blocks":
        return (place, scope)
    if function == "record_events":
        return (place, False)
    return (place,)


def _call(function, *args):
    return lambda: getattr(fluid.memory, function)(*args)


def place_cases(marker):
    bad_places = [("none", None), ("str", "cpu"), ("int", 0), ("program", fluid.Program()),
                  ("dict", {"device": "cpu"}), ("payload", Payload(marker)),
                  ("class", fluid.CPUPlace)]
    cases = []
    for function in FUNCTIONS:
        for label, place in bad_places:
            args = _args(function, place=place, address=1, scope=fluid.Scope())
            cases.append(Case(FAMILY, f"place-{label}-{function}", _call(function, *args),
                              state=arena_state, mentions=("place",)))
    return cases


def size_cases(marker):
    sizes = [("zero", 0), ("minus-one", -1), ("minus-2-63", -2 ** 63), ("2-63", 2 ** 63),
             ("2-64", 2 ** 64), ("2-1000", 2 ** 1000), ("10-5000", 10 ** 5000),
             ("float", 1.5), ("nan", math.nan), ("inf", math.inf), ("str", "8"),
             ("bytes", b"8"), ("none", None), ("true", True), ("list", [8]),
             ("float64", np.float64(8)), ("array", np.array([8])), ("payload", Payload(marker)),
             ("past-the-limit", 2 ** 62)]
    cases = [Case(FAMILY, f"alloc-size-{label}", _call("alloc", CPU, size), state=arena_state,
                  mentions=("size",) if label != "past-the-limit" else ("memory",))
             for label, size in sizes]
    for label, size in (("int64", np.int64(300)), ("one", 1), ("int", 4096)):
        cases.append(Case(FAMILY, f"alloc-size-{label}-works", _alloc_and_free(size),
                          must_fail=False))
    return cases


def _alloc_and_free(size):
    def act():
        used = fluid.memory.used(CPU)
        address = fluid.memory.alloc(CPU, size)
        assert fluid.memory.used(CPU) >= used + size
        fluid.memory.free(CPU, address)
        assert fluid.memory.used(CPU) == used
    return act


# --- frees of addresses alloc did not give out --------------------------------------------
_held = {}


def held_scope():
    """A scope after one SGD step (its parameters and the fetched loss live in the arena)."""
    if "scope" not in _held:
        exe, scope = fluid.Executor(CPU), fluid.Scope()
        main, startup, loss = model("sgd")
        exe.run(startup, scope=scope)
        _held["fetched"] = exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)[0]
        _held["scope"] = scope
    return _held["scope"]


def _data(array):
    return array.__array_interface__["data"][0]


def _free_of(address_of):
    return lambda: fluid.memory.free(CPU, address_of())


def _block_then(then):
    """Alloc a block, free what ``then(block)`` says, give the block back either way."""
    def act():
        block = fluid.memory.alloc(CPU, 4096)
        try:
            fluid.memory.free(CPU, then(block))
        finally:
            if block in places.host_arena().given:
                fluid.memory.free(CPU, block)
    return act


def _freed_block():
    block = fluid.memory.alloc(CPU, 1024)
    fluid.memory.free(CPU, block)
    return block


def free_cases(marker):
    def param(name, offset=0):
        return lambda: _data(held_scope().find_var(name).value.array) + offset

    def scope_and_arena():
        return arena_state(), scope_state(held_scope())

    cases = []
    for name in ("fc_0.w_0", "fc_0.b_0", "batch_norm_0.w_1", "batch_norm_0.w_2", "fc_1.w_0",
                 "learning_rate_0"):
        for label, offset in (("block", 0), ("inside", 4)):
            cases.append(Case(FAMILY, f"free-parameter-{name}-{label}",
                              _free_of(param(name, offset)), state=scope_and_arena,
                              setup=held_scope, mentions=("address",)))
    cases.append(Case(FAMILY, "free-fetched-array",
                      _free_of(lambda: (held_scope(), _data(_held["fetched"]))[1]),
                      state=scope_and_arena, setup=held_scope, mentions=("address",)))
    for label, address in (("zero", 0), ("minus-one", -1), ("2-64", 2 ** 64),
                           ("2-1000", 2 ** 1000), ("float", 1.0), ("str", "0x10"),
                           ("none", None), ("payload", Payload(marker)),
                           ("numpy-array", np.zeros(4))):
        cases.append(Case(FAMILY, f"free-address-{label}",
                          _call("free", CPU, address), state=arena_state,
                          mentions=("address",)))
    for label, then in (("offset-16", lambda b: b + 16), ("offset-2048", lambda b: b + 2048),
                        ("before", lambda b: b - 256)):
        cases.append(Case(FAMILY, f"free-block-{label}", _block_then(then), state=arena_state,
                          mentions=("address",)))
    cases.append(Case(FAMILY, "free-twice", _free_of(_freed_block), state=arena_state,
                      mentions=("address",)))
    return cases


def scope_cases(marker):
    cases = []
    for label, scope in (("str", "x"), ("int", 3), ("program", fluid.Program()),
                         ("block", fluid.Program().global_block()), ("dict", {}),
                         ("payload", Payload(marker))):
        for function in ("holders", "blocks"):
            cases.append(Case(FAMILY, f"{function}-scope-{label}",
                              _call(function, CPU, scope), state=arena_state,
                              mentions=("scope",)))
    cases.append(Case(FAMILY, "holders-scope-none", _call("holders", CPU, None),
                      state=arena_state, mentions=("scope",)))
    cases.append(Case(FAMILY, "blocks-scope-none-works", _call("blocks", CPU, None),
                      must_fail=False))
    for label, on in (("str", "yes"), ("array", np.array([True, False])), ("none", None),
                      ("payload", Payload(marker))):
        cases.append(Case(FAMILY, f"record-events-{label}", _call("record_events", CPU, on),
                          state=arena_state, mentions=("on",)))
    return cases


# --- flags ------------------------------------------------------------------------------------
def _set(name, value):
    return lambda: fluid.set_flags({name: value})


def flag_cases(marker):
    values = {
        "FLAGS_fraction_of_cpu_memory_to_use": [("zero", 0.0), ("negative", -0.5),
                                                ("above-one", 1.5), ("nan", math.nan),
                                                ("inf", math.inf), ("huge-int", 10 ** 400),
                                                ("str", "0.5")],
        "FLAGS_fraction_of_gpu_memory_to_use": [("zero", 0.0), ("nan", math.nan)],
        "FLAGS_initial_cpu_memory_in_mb": [("zero", 0), ("negative", -1), ("2-80", 2 ** 80),
                                           ("float", 1.5)],
        "FLAGS_memory_event_limit": [("negative", -1), ("2-64", 2 ** 64),
                                     ("10-30", 10 ** 30), ("float", 2.0), ("str", "x"),
                                     ("payload", Payload(marker))],
    }
    cases = []
    for name, bad in values.items():
        short = name[len("FLAGS_"):].replace("_", "-")
        for label, value in bad:
            cases.append(Case(FAMILY, f"flag-{short}-{label}", _set(name, value),
                              state=arena_state, mentions=(name,)))
    # (a new fraction gives the host a new arena: the flags are what must come back)
    cases.append(Case(FAMILY, "flag-tiny-fraction-is-a-limit", _tiny_fraction_alloc,
                      state=lambda: dict(flags._values), mentions=("limit",)))
    return cases


def _tiny_fraction_alloc():
    """A fraction that rounds to no byte at all is a limit nothing fits in, not no limit."""
    saved = dict(flags._values)
    try:
        fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use": 1e-12})
        fluid.memory.alloc(CPU, 256)
    finally:
        flags._values.clear()
        flags._values.update(saved)
        flags.version[0] += 1


# --- a training step running out of memory after each op -------------------------------------
_steps = {}
N_RUN_OPS = {}  # optimizer -> ops of one run (the two feed ops, the program's, the fetch)


def trained(optimizer):
    """(exe, main, scope, loss) after one step, in an arena of about 64 MiB."""
    if optimizer not in _steps:
        if "flags" not in _steps:
            _steps["flags"] = small_arena()
        main, startup, loss = model(optimizer)
        exe, scope = fluid.Executor(CPU), fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
        _steps[optimizer] = (exe, main, scope, loss)
    return _steps[optimizer]


def _out_of_memory_after(optimizer, index, room):
    def act():
        exe, main, scope, loss = trained(optimizer)
        trace = FailAfter(index, "memory", room)
        exe.trace = trace
        try:
            exe.run(main, feed=batch(7), fetch_list=[loss], scope=scope)
        finally:
            exe.trace = None
            give_back(trace.filler)
    return act


def step_cases(marker):
    cases = []
    for optimizer in sorted(OPTIMIZERS):
        main, _, _ = model(optimizer)
        types = ["feed", "feed"] + [op.type for op in main.global_block().ops] + ["fetch"]
        for index, op_type in enumerate(types):
            last = index == len(types) - 1  # after the fetch no op is left to run out
            cases.append(Case(
                FAMILY, f"step-{optimizer}-out-of-memory-after-op-{index:02d}-{op_type}",
                _out_of_memory_after(optimizer, index, 0),
                state=lambda optimizer=optimizer: scope_state(trained(optimizer)[2]),
                setup=lambda optimizer=optimizer: trained(optimizer),
                must_fail=not last, mentions=() if last else ("memory",)))
            if op_type != optimizer or index == len(types) - 2:
                continue
            # room for an array or two: the update op gets its first arrays and runs out
            # on a later one, inside the op (the 64 KiB room: fc_0.w_0's update; not
            # sgd's, whose one C call makes only the new parameter, which fits); not the
            # last update, whose 512 bytes may fit in what the step's dead gradients free
            for room in (512, 64 << 10):
                param = main.global_block().ops[index - 2].input("Param")[0]
                if room > 512 and (param != "fc_0.w_0" or optimizer == "sgd"):
                    continue
                cases.append(Case(
                    FAMILY, f"step-{optimizer}-room-{room}-at-op-{index:02d}-{param}",
                    _out_of_memory_after(optimizer, index - 1, room),
                    state=lambda optimizer=optimizer: scope_state(trained(optimizer)[2]),
                    setup=lambda optimizer=optimizer: trained(optimizer),
                    mentions=("memory",)))
    return cases


def cases(workdir):
    marker = executed_marker(workdir)
    return (place_cases(marker) + size_cases(marker) + free_cases(marker)
            + scope_cases(marker) + flag_cases(marker) + step_cases(marker))


test_corpus = family_test(cases, seconds=20)


def teardown_module():
    if "flags" in _steps:
        restore_flags(_steps.pop("flags"))
