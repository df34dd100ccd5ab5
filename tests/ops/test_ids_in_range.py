"""The ids a lookup, one_hot or gather reads are checked on the host by one comparison (a
negative id read unsigned is past any size): the first id out of [0, size) in C order is
the one named, whatever the ids' integer type."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops.common import first_out_of_range


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32",
                                   "uint64"])
def test_every_integer_type_is_checked_at_both_bounds(dtype):
    info = np.iinfo(dtype)
    inside = np.array([0, 1, 6], dtype)
    assert first_out_of_range(inside, 7) is None
    assert first_out_of_range(np.array([3, 7, 0], dtype), 7) == 7
    assert first_out_of_range(np.array([info.max, 1], dtype), 7) == info.max
    if info.min < 0:
        assert first_out_of_range(np.array([1, -1, 9], dtype), 7) == -1
        assert first_out_of_range(np.array([info.min], dtype), 7) == info.min


def test_the_first_bad_id_in_c_order_is_named():
    ids = np.array([[0, 9], [-3, 2]], "int64")
    assert first_out_of_range(ids, 5) == 9
    assert first_out_of_range(ids.T, 5) == -3  # (a strided view: its own C order)
    assert first_out_of_range(np.array(4, "int32"), 4) == 4  # (0-D)
    assert first_out_of_range(np.zeros((0, 3), "int64"), 0) is None


def test_a_size_of_zero_refuses_every_id_and_float_ids_compare_as_floats():
    assert first_out_of_range(np.array([0], "int64"), 0) == 0
    assert first_out_of_range(np.array([0.5, 7.5]), 7) == 7.5
    assert first_out_of_range(np.array([-0.5, 1.0]), 7) == -0.5


@pytest.mark.parametrize("ids, bad", [([[1], [-1]], -1), ([[8], [2]], 8)])
def test_one_hot_and_an_embedding_name_the_id_out_of_range(ids, bad):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2, 1], dtype="int64", append_batch_size=False)
        hot = fluid.layers.one_hot(x, 8)
        emb = fluid.layers.embedding(x, [8, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.array(ids, "int64")}
    for out in (hot, emb):
        with pytest.raises(InvalidArgument, match=f"values in \\[0, 8\\).*{bad}"):
            exe.run(main, feed=feed, fetch_list=[out], scope=scope)
