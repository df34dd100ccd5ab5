"""Bad-input corpus, LoD: every malformed form of offsets and lengths, through every way a
LoD gets in (``LoDTensor(arr, lod)``, ``set_lod``, ``set_recursive_sequence_lengths``,
``create_lod_tensor``, a fed ``(array, lod)`` pair). Each is refused with a typed error, and
the tensor it was given to keeps its old LoD."""
import random

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.tensor.tensor import LoDTensor, create_lod_tensor

from .corpus import Case, check

ROWS = 6

# offset LoDs for 6 rows: (name, lod, valid)
OFFSETS = [
    ("one_level", [[0, 2, 6]], True),
    ("two_levels", [[0, 1, 3], [0, 2, 4, 6]], True),
    ("empty_sequence", [[0, 0, 6]], True),
    ("integral_floats", [[0, 2.0, 6]], True),
    ("numpy_ints", [np.array([0, 3, 6])], True),
    ("none", None, False),
    ("int", 5, False),
    ("string", "0,2,6", False),
    ("flat_list", [0, 2, 6], False),
    ("level_none", [None], False),
    ("level_string", ["026"], False),
    ("fraction", [[0, 1.5, 6]], False),
    ("nan", [[0, float("nan"), 6]], False),
    ("inf", [[0, float("inf"), 6]], False),
    ("string_offset", [[0, "2", 6]], False),
    ("bool_offset", [[0, True, 6]], False),
    ("none_offset", [[0, None, 6]], False),
    ("nested_offset", [[0, [2], 6]], False),
    ("not_from_zero", [[1, 2, 6]], False),
    ("empty_level", [[]], False),
    ("decreasing", [[0, 4, 2, 6]], False),
    ("negative", [[0, -1, 6]], False),
    ("past_rows", [[0, 2, 7]], False),
    ("short_of_rows", [[0, 2, 5]], False),
    ("upper_level_past_lower", [[0, 1, 4], [0, 2, 4, 6]], False),
    ("upper_level_decreasing", [[0, 2, 1], [0, 2, 4, 6]], False),
    ("complex_offset", [[0, 2 + 1j, 6]], False),
]

# sequence lengths for 6 rows
LENGTHS = [
    ("one_level", [[2, 4]], True),
    ("two_levels", [[1, 2], [2, 2, 2]], True),
    ("integral_floats", [[2.0, 4.0]], True),
    ("zero_length", [[0, 6]], True),
    ("none", None, False),
    ("int", 6, False),
    ("flat_list", [2, 4], False),
    ("fraction", [[1.5, 4.5]], False),
    ("nan", [[float("nan"), 6]], False),
    ("negative", [[-1, 7]], False),
    ("string", [["2", "4"]], False),
    ("sum_past_rows", [[3, 4]], False),
    ("sum_short_of_rows", [[1, 4]], False),
    ("upper_past_lower", [[2, 2], [3, 3]], False),
]


def _tensor():
    return LoDTensor(np.arange(ROWS, dtype="float32").reshape(ROWS, 1), [[0, 3, 6]])


def _lod_cases():
    for name, lod, valid in OFFSETS:
        rows_valid = valid  # every valid one above ends at ROWS
        target = _tensor()
        yield Case("lod", f"set_lod_{name}", lambda lod=lod, t=target: t.set_lod(lod),
                   lambda t=target: t.lod(), not rows_valid, ("set_lod",))

        def construct(lod=lod):
            LoDTensor(np.zeros((ROWS, 1), "float32"), lod)
        # the constructor checks the structure (kernels share a LoD across row counts); the
        # rows are checked where the tensor is fed
        structural = name not in ("past_rows", "short_of_rows")
        if lod is None:
            yield Case("lod", f"constructor_{name}", construct, None, False)  # None: no LoD
        else:
            yield Case("lod", f"constructor_{name}", construct, None,
                       not valid if structural else None)
        yield Case("lod", f"feed_pair_{name}", _feed_pair(lod), None, not valid)
    for name, lengths, valid in LENGTHS:
        target = _tensor()
        yield Case("lod", f"set_lengths_{name}",
                   lambda lengths=lengths, t=target: t.set_recursive_sequence_lengths(lengths),
                   lambda t=target: t.lod(), not valid)
        yield Case("lod", f"create_{name}",
                   lambda lengths=lengths: create_lod_tensor(
                       np.zeros((ROWS, 1), "float32"), lengths, fluid.CPUPlace()),
                   None, not valid, ("create_lod_tensor",))
    for name, lod, valid in OFFSETS:  # the same levels in the design documents' row notation
        yield Case("lod", f"row_offsets_{name}",
                   lambda lod=lod: fluid.lod_from_row_offsets(lod), None,
                   True if lod is None else None, ("lod_from_row_offsets",))
    rng = random.Random(7)
    for i in range(30):  # random offsets: refused exactly when not a valid LoD for 6 rows
        offsets = [0] + sorted(rng.randint(0, ROWS) for _ in range(rng.randint(0, 4))) + [ROWS]
        mutation = rng.choice(["swap", "shift", "fraction", "none"])
        if mutation == "swap" and len(offsets) > 2:
            k = rng.randrange(1, len(offsets) - 1)
            offsets[k], offsets[k + 1] = offsets[k + 1], offsets[k]
        elif mutation == "shift":
            offsets[rng.randrange(len(offsets))] += rng.choice([-1, 1])
        elif mutation == "fraction":
            offsets[rng.randrange(len(offsets))] += 0.5
        valid = (offsets[0] == 0 and offsets[-1] == ROWS and all(float(x).is_integer()
                                                                 for x in offsets)
                 and all(a <= b for a, b in zip(offsets, offsets[1:])))
        target = _tensor()
        yield Case("lod", f"random_{i}_{mutation}",
                   lambda o=offsets, t=target: t.set_lod([o]), lambda t=target: t.lod(),
                   not valid)


def _pool_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = fluid.layers.data(name="s", shape=[1], dtype="float32", lod_level=1)
        pooled = fluid.layers.sequence_pool(s, "sum")
    return main, pooled


POOL_MAIN, POOLED = _pool_program()
EXE = fluid.Executor(fluid.CPUPlace())


def _feed_pair(lod):
    def act():
        data = np.arange(ROWS, dtype="float32").reshape(ROWS, 1)
        out, = EXE.run(POOL_MAIN, feed={"s": (data, lod)}, fetch_list=[POOLED],
                       scope=fluid.Scope())
        offsets = [int(x) for x in list(lod[-1])]
        want = [data[a:b].sum() for a, b in zip(offsets, offsets[1:])]
        np.testing.assert_allclose(out.ravel(), want)
    return act


CASES = list(_lod_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_lod_corpus(case):
    check(case)


def test_decreasing_lod_never_reaches_sequence_ops():
    """A decreasing LoD given to the constructor is refused there, so sequence_pool never
    sums a negative-length sequence."""
    with pytest.raises(fluid.errors.InvalidArgument, match="non-decreasing"):
        LoDTensor(np.ones((3, 1), "float32"), [[0, 2, 1, 3]])
