"""Bad-input corpus, feeds: every kind of value a user may pass to ``Executor.run(feed=...)``
and to ``DataFeeder.feed``, each either refused with a typed error naming the feed, or
handled correctly; the scope is unchanged after a refusal."""
import random

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.data_feeder import DataFeeder
from fluid_nb.tensor.tensor import LoDTensor

from .corpus import Case, check, state_of


def _programs():
    """Two programs on one scope: ``x`` scaled, and int64 ``ids`` sequences pooled."""
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    dense, dense_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(dense, dense_startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")  # fed shapes checked
        y = fluid.layers.scale(x, scale=2.0)
        loose = fluid.layers.data(name="loose", shape=[3], dtype="float32")  # as Fluid: not
        loose_out = fluid.layers.scale(loose, scale=2.0)
    seq, seq_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(seq, seq_startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[10, 4])
        pooled = fluid.layers.sequence_pool(emb, "sum")
    exe.run(seq_startup, scope=scope)
    # one valid run each, as a user's first: the runs' feed/fetch holders exist from here on
    exe.run(seq, feed={"ids": (np.ones((1, 1), "int64"), [[0, 1]])}, fetch_list=[pooled],
            scope=scope)
    exe.run(dense, feed={"x": np.ones((1, 3), "float32"), "loose": np.ones((1, 3), "float32")},
            fetch_list=[y, loose_out], scope=scope)
    return dense, seq, scope, exe, x, y, ids, pooled, loose_out


MAIN, SEQ, SCOPE, EXE, X, Y, IDS, POOLED, LOOSE_OUT = _programs()


def _run_x(value, name="x"):
    def act():
        feed = {"x": np.ones((1, 3), "float32"), "loose": np.ones((1, 3), "float32")}
        feed[name] = value
        out = EXE.run(MAIN, feed=feed, fetch_list=[Y, LOOSE_OUT], scope=SCOPE)
        data = np.asarray(value[0] if isinstance(value, tuple) else value, "float32")
        got = out[0 if name == "x" else 1]
        if name == "x":  # fed with trailing dims of 1, x holds the declared rank
            data = data.reshape(got.shape)
        np.testing.assert_allclose(got, 2 * data, rtol=1e-6)
    return act


def _run_ids(value):
    return lambda: EXE.run(SEQ, feed={"ids": value}, fetch_list=[POOLED], scope=SCOPE)


def _stale_lod_tensor():
    """A tensor whose LoD was set for 3 rows, then given an array of 2."""
    tensor = LoDTensor(np.ones((3, 3), "float32"), [[0, 1, 3]])
    tensor.set(np.ones((2, 3), "float32"), fluid.CPUPlace())
    return tensor


def _feed_cases():
    rng = random.Random(1)
    state = state_of(MAIN, SEQ, scope=SCOPE)
    bad_x = {
        "ragged_rows": [[1, 2, 3], [4, 5]],
        "ragged_deep": [[[1], [2, 3]]],
        "none": None,
        "string": "abc",
        "bytes": b"abc",
        "dict": {"a": 1},
        "set": {1, 2},
        "object_array": np.array([[1, None, 3]], dtype=object),
        "string_array": np.array([["a", "b", "c"]]),
        "uninitialised_tensor": LoDTensor(),
        "float_to_int_lossy_shape": np.ones((2, 4), "float32"),
        "rank_1": np.ones(3, "float32"),
        "rank_3": np.ones((2, 3, 2), "float32"),
        "rank_3_leading_one": np.ones((1, 2, 3), "float32"),
        "scalar": 1.5,
        "complex": np.ones((2, 3), "complex64"),
        "empty_list": [],
        "list_of_none": [[None, None, None]],
        "mixed_strings": [[1, "a", 2]],
        "nested_objects": [[object(), 1, 2]],
        "lod_mismatching_rows": (np.ones((2, 3), "float32"), [[0, 1, 3]]),
        "lod_not_from_zero": (np.ones((2, 3), "float32"), [[1, 2]]),
        "lod_decreasing_pair": (np.ones((3, 3), "float32"), [[0, 2, 1, 3]]),
        "lod_fraction_pair": (np.ones((3, 3), "float32"), [[0, 1.5, 3]]),
        "lod_nan_pair": (np.ones((3, 3), "float32"), [[0, float("nan"), 3]]),
        "tensor_rank_3": LoDTensor(np.ones((2, 3, 2), "float32")),
        "tensor_known_dim_off": LoDTensor(np.ones((2, 4), "float32")),
        "tensor_float64_wrong_shape": LoDTensor(np.ones((2, 4), "float64")),
        "tensor_stale_lod": _stale_lod_tensor(),
    }
    for name, value in bad_x.items():
        yield Case("feeds", f"x_{name}", _run_x(value), state, True)
    good_x = {
        "float32": np.ones((2, 3), "float32"),
        "float64_cast": np.ones((2, 3), "float64"),
        "int_to_float": np.ones((2, 3), "int64"),
        "nested_lists": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
        "nan_values": np.full((2, 3), np.nan, "float32"),
        "inf_values": np.full((1, 3), np.inf, "float32"),
        "tensor": LoDTensor(np.ones((4, 3), "float32")),
        "tensor_float64_cast": LoDTensor(np.ones((2, 3), "float64")),
        "tensor_int_to_float": LoDTensor(np.ones((2, 3), "int32")),
        "tensor_with_lod": LoDTensor(np.ones((3, 3), "float32"), [[0, 1, 3]]),
        "pair_with_lod": (np.ones((3, 3), "float32"), [[0, 1, 3]]),
        "pair_integral_float_lod": (np.ones((3, 3), "float32"), [[0, 1.0, 3]]),
        "zero_rows": np.zeros((0, 3), "float32"),
        # a trailing dim of size 1 is dropped (Fluid 1.x feeds ids as [N, 1] into [-1])
        "trailing_one_dim": np.ones((2, 3, 1), "float32"),
    }
    for name, value in good_x.items():
        if name in ("nan_values", "inf_values"):
            def act(value=value):
                out, = EXE.run(MAIN, feed={"x": value, "loose": value}, fetch_list=[Y],
                               scope=SCOPE)
                assert np.array_equal(np.isnan(out), np.isnan(value))
            yield Case("feeds", f"x_valid_{name}", act, state, False)
        else:
            yield Case("feeds", f"x_valid_{name}", _run_x(value), state, False)
    for i in range(20):  # random wrong shapes: a rank or a known dim off
        rank = rng.choice([1, 2, 3, 4])
        dims = [rng.randint(1, 5) for _ in range(rank)]
        if rank >= 2 and dims[1] == 3:
            dims[1] = 4  # (a right shape with trailing dims of 1 would be a right feed)
        yield Case("feeds", f"x_shape_{i}_{dims}", _run_x(np.ones(dims, "float32")), state,
                   True, mentions=("feed 'x'",))
    for i in range(10):  # a layers.data variable takes any shape, as in Fluid 1.x
        dims = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        yield Case("feeds", f"loose_any_shape_{i}_{dims}",
                   _run_x(np.ones(dims, "float32"), "loose"), state, False)
    yield Case("feeds", "loose_scalar", _run_x(np.float32(2.5), "loose"), state, False)
    for i in range(10):  # random float data into the int64 ids: refused, never truncated
        n = rng.randint(1, 4)
        value = (np.full((n, 1), rng.random() + 0.5, "float32"), [[0, n]])
        yield Case("feeds", f"ids_float_{i}", _run_ids(value), state, True)
    bad_ids = {
        "lod_longer_than_rows": (np.zeros((3, 1), "int64"), [[0, 2, 5]]),
        "lod_none_level": (np.zeros((3, 1), "int64"), [None]),
        "lod_string": (np.zeros((3, 1), "int64"), [["0", "3"]]),
        "ragged_ids": [[1], [2, 3]],
    }
    for name, value in bad_ids.items():
        yield Case("feeds", f"ids_{name}", _run_ids(value), state, True)
    yield Case("feeds", "ids_valid_sequences",
               _run_ids((np.array([[1], [2], [3]], "int64"), [[0, 1, 3]])), state, False)
    feeder = DataFeeder([X, IDS], fluid.CPUPlace())
    bad_batches = {
        "ragged_sample": [([1.0, 2.0], [1, 2])],
        "none_entry": [(None, [1])],
        "string_entry": [("abc", [1])],
        "wrong_entry_count": [([1.0, 2.0, 3.0],)],
        "sample_not_a_tuple": [5],
        "ids_float": [([1.0, 2.0, 3.0], [1.5])],
        "ids_strings": [([1.0, 2.0, 3.0], ["a"])],
        "sequence_not_a_list": [([1.0, 2.0, 3.0], 7)],
    }
    for name, batch in bad_batches.items():
        yield Case("feeds", f"feeder_{name}", lambda batch=batch: feeder.feed(batch), None, True)

    def feeder_ok():
        feed = feeder.feed([([1.0, 2.0, 3.0], [1, 2]), ([4.0, 5.0, 6.0], [3])])
        assert feed["ids"].lod() == [[0, 2, 3]]
    yield Case("feeds", "feeder_valid", feeder_ok, None, False)


CASES = list(_feed_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_feed_corpus(case):
    check(case)
