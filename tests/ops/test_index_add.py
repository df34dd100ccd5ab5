"""index_add: the scatter-add behind every sparse and gathered gradient (an embedding's rows,
a sequence convolution's context rows, MergeAdd of SelectedRows) means np.add.at, and on the
host gives np.add.at's sums bit for bit, whichever path takes it."""
import numpy as np
import pytest

from fluid_nb.tensor.tensor import _tensor, index_add


def _both(target, index, values):
    expected = target.copy()
    np.add.at(expected, index, values)
    got = index_add(np, target.copy(), index, values)
    return expected, got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_added_in_index_order_give_np_add_at_bit_for_bit(dtype):
    rng = np.random.RandomState(3)
    for _ in range(200):
        shape = (rng.randint(1, 40),) + tuple(rng.randint(1, 6, rng.randint(0, 3)))
        count = rng.randint(0, 300)
        index = rng.randint(-shape[0], shape[0], count)  # repeats, and counted from the end
        values = (rng.standard_normal((count,) + shape[1:]) * 1e3).astype(dtype)
        target = rng.standard_normal(shape).astype(dtype)
        assert _tensor.index_add(target.copy(), index, values)  # the C loop takes these
        expected, got = _both(target, index, values)
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("case", ["int32 index", "strided values", "values in the target",
                                  "scalar values", "int target", "tuple index", "mask"])
def test_every_other_form_still_means_np_add_at(case):
    rng = np.random.RandomState(5)
    target = rng.standard_normal((6, 4)).astype("float32")
    index = rng.randint(0, 6, 9)
    values = rng.standard_normal((9, 4)).astype("float32")
    if case == "int32 index":
        index = index.astype("int32")
    elif case == "strided values":
        values = rng.standard_normal((4, 9)).astype("float32").T
    elif case == "scalar values":
        values = np.float32(0.5)
    elif case == "int target":
        target, values = target.astype("int64"), values.astype("int64")
    elif case == "tuple index":
        index, values = (index, index % 4), values[:, 0]
    elif case == "mask":
        index, values = np.arange(6) % 2 == 0, values[:3]
    if case == "values in the target":
        expected = target.copy()
        np.add.at(expected, [0, 1, 1], expected[3:6].copy())
        got = target.copy()
        index_add(np, got, np.array([0, 1, 1]), got[3:6])
    else:
        expected, got = _both(target, index, values)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


def test_an_index_out_of_range_writes_nothing_and_raises_as_numpy_does():
    target = np.zeros((4, 3), "float32")
    index = np.array([0, 1, 2, 4])  # the last one is past the rows
    values = np.ones((4, 3), "float32")
    assert _tensor.index_add(target, index, values) is False
    assert not target.any()  # the first three rows were not added before the check
    with pytest.raises(IndexError) as ours:
        index_add(np, target, index, values)
    with pytest.raises(IndexError) as numpys:
        np.add.at(np.zeros((4, 3), "float32"), index, values)
    assert str(ours.value) == str(numpys.value)


def test_a_read_only_target_or_values_of_another_shape_are_refused_as_numpy_refuses():
    frozen = np.zeros((4, 3), "float32")
    frozen.flags.writeable = False
    for target, values in [(frozen, np.ones((2, 3), "float32")),
                           (np.zeros((4, 3), "float32"), np.ones((2, 2), "float32"))]:
        with pytest.raises(ValueError) as ours:
            index_add(np, target, np.array([0, 1]), values)
        with pytest.raises(ValueError) as numpys:
            np.add.at(target.copy() if target.flags.writeable else target, np.array([0, 1]),
                      values)
        assert str(ours.value) == str(numpys.value)
