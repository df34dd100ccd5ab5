"""``fluid.set_flags`` / ``fluid.get_flags``: Fluid's global FLAGS_ settings.

Fluid reads its flags in C++ (allocator, memory fractions, debugging checks). Here each
known flag is a typed value kept in this module (its environment variable gives the
default, as in Fluid), so that scripts setting or reading them run unchanged. The host
memory arena reads ``FLAGS_use_system_allocator``, ``FLAGS_initial_cpu_memory_in_mb``,
``FLAGS_fraction_of_cpu_memory_to_use`` and ``FLAGS_memory_event_limit``
(:mod:`fluid_nb.memory.places`), and the executor ``FLAGS_eager_delete_tensor_gb`` (below
0: temporaries live to the end of a run) and ``FLAGS_inplace_update`` (off: update ops make
new arrays instead of writing parameters in place; not one of Paddle's flags, whose updates
are always in place; ``Executor.run`` keeps the values a step started from until the step
ends, so there a step's trailing updates are written in place at once, after everything
that can fail: ``exec/update_commit.py``); the parameter
server runtime (:mod:`fluid_nb.distributed`) reads ``FLAGS_rpc_deadline`` (ms an RPC may
take, retries included), ``FLAGS_rpc_retry_times``, ``FLAGS_rpc_round_deadline`` (ms a
sync-mode server waits for the trainers of a round once it has begun; not one of Paddle's
flags) and ``FLAGS_rpc_reconnect_deadline`` (ms a trainer keeps calling a server that
answered before and went away, for it to come back; not one of Paddle's); the others are kept for scripts that set them.
An unknown name is refused, as in Fluid, with the known ones listed, and so is a value of
another type or, for the memory flags, out of its range (an environment variable out of
range is ignored, as one that does not parse).
"""
import os

from .errors import InvalidArgument, InvalidType, NotFound, expected

#: flag -> default value (its type is the default's)
DEFAULTS = {
    "FLAGS_check_nan_inf": False,
    "FLAGS_benchmark": False,
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_fast_eager_deletion_mode": True,
    "FLAGS_memory_fraction_of_eager_deletion": 1.0,
    "FLAGS_fraction_of_gpu_memory_to_use": 0.92,
    "FLAGS_initial_gpu_memory_in_mb": 0,
    "FLAGS_reallocate_gpu_memory_in_mb": 0,
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_cudnn_deterministic": False,
    "FLAGS_cudnn_exhaustive_search": False,
    "FLAGS_conv_workspace_size_limit": 512,
    "FLAGS_enable_parallel_graph": False,
    "FLAGS_sync_nccl_allreduce": True,
    "FLAGS_selected_gpus": "",
    "FLAGS_use_mkldnn": False,
    "FLAGS_paddle_num_threads": 1,
    "FLAGS_rpc_deadline": 180000,
    "FLAGS_rpc_retry_times": 3,
    "FLAGS_rpc_round_deadline": 60000,
    "FLAGS_rpc_reconnect_deadline": 60000,
    "FLAGS_print_sub_graph_dir": "",
    "FLAGS_use_ngraph": False,
    "FLAGS_inner_op_parallelism": 0,
    "FLAGS_enable_cublas_tensor_op_math": False,
    "FLAGS_free_idle_chunk": False,
    "FLAGS_free_when_no_cache_hit": False,
    "FLAGS_use_system_allocator": False,
    "FLAGS_initial_cpu_memory_in_mb": 500,
    "FLAGS_fraction_of_cpu_memory_to_use": 1.0,
    "FLAGS_memory_event_limit": 1 << 20,
    "FLAGS_inplace_update": True,
}

#: the most an int flag counted in bytes, MiB or events may be: what a C size holds
_MOST = (1 << 63) - 1


def _fraction(value):
    return 0 < value <= 1  # NaN fails both comparisons


#: flag -> (test of a value of the flag's type, what the test wants): the values the
#: memory arenas can be built from; set_flags refuses any other
RULES = {
    "FLAGS_fraction_of_cpu_memory_to_use": (_fraction, "a fraction in (0, 1]"),
    "FLAGS_fraction_of_gpu_memory_to_use": (_fraction, "a fraction in (0, 1]"),
    "FLAGS_initial_cpu_memory_in_mb": (lambda v: 1 <= v <= _MOST >> 20,
                                       f"an int >= 1 and at most {_MOST >> 20}"),
    "FLAGS_initial_gpu_memory_in_mb": (lambda v: 0 <= v <= _MOST >> 20,
                                       f"an int >= 0 and at most {_MOST >> 20}"),
    "FLAGS_memory_event_limit": (lambda v: 0 <= v <= _MOST, f"an int >= 0 and at most {_MOST}"),
}

_values = {}
#: bumped by every set_flags, so readers can cache what they derive from flags
version = [0]


def _known(name, where):
    if not isinstance(name, str):
        raise InvalidType(expected(where, "flag name", "a str", repr(name)))
    if name not in DEFAULTS:
        raise NotFound(expected(where, "flag name", "one of Fluid's flags ("
                                + ", ".join(sorted(DEFAULTS)) + ")", repr(name)))
    return name


def _from_environment(name):
    """A flag's value from the environment variable of its name, as Fluid reads it."""
    text = os.environ.get(name)
    default = DEFAULTS[name]
    if text is None:
        return default
    if isinstance(default, bool):
        return text.strip().lower() in ("1", "true", "yes")
    try:
        value = type(default)(text)
    except (ValueError, OverflowError):
        return default
    return value if _obeys(name, value) else default


def _obeys(name, value):
    rule = RULES.get(name)
    return rule is None or rule[0](value)


def get_flags(flags):
    """``{name: value}`` of a flag name or a list of them."""
    names = [flags] if isinstance(flags, str) else flags
    if not isinstance(names, (list, tuple)):
        raise InvalidType(expected("get_flags", "flags", "a flag name or a list of them",
                                   repr(flags)))
    return {name: _values.get(_known(name, "get_flags"), _from_environment(name))
            for name in names}


def set_flags(flags):
    """Set flags from a ``{name: value}`` dict; each value must have its flag's type, and
    the memory flags' values their range (``RULES``). All or nothing: a refused value
    leaves every flag as it was."""
    if not isinstance(flags, dict):
        raise InvalidType(expected("set_flags", "flags", "a dict of flag names to values",
                                   repr(flags)))
    checked = {}
    for name, value in flags.items():
        default = DEFAULTS[_known(name, "set_flags")]
        kind = type(default)
        # by the value's type alone: a check runs none of the value's own code
        given = type(value)
        fits = issubclass(given, kind) and (kind is not int or given is not bool)
        if kind is float and issubclass(given, int) and given is not bool:
            fits = abs(value) <= _MOST_FLOAT
            value = float(value) if fits else value
        if not fits:
            raise InvalidType(expected("set_flags", f"flag {name}", f"a {kind.__name__}",
                                       f"{_shown(value)} ({type(value).__name__})"))
        if not _obeys(name, value):
            raise InvalidArgument(expected("set_flags", f"flag {name}", RULES[name][1],
                                           _shown(value)))
        checked[name] = value
    _values.update(checked)  # all or nothing
    version[0] += 1


_MOST_FLOAT = 1 << 1023  # ints beyond a float's range stay ints (and are refused)


def _shown(value):
    """A value for a message: its repr where it is plain data (no code of the caller's
    runs), else its type's name."""
    kind = type(value)
    if kind not in (bool, int, float, str, bytes, type(None)):
        return f"a {kind.__name__} object"
    if kind is int and value.bit_length() > 64:  # repr refuses ints of > 4300 digits
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def flag(name):
    """The current value of one flag (for fluid_nb's own readers)."""
    value = _values.get(name, _UNSET)
    return _from_environment(name) if value is _UNSET else value


_UNSET = object()
