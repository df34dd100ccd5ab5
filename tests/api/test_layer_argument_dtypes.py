"""The argument types and dtypes Fluid 1.8's layers refuse at the call (a TypeError), and
what they accept instead: comparisons and logical ops, assign, cast, fill_constant,
elementwise ops, fc, embedding, lod_reset, concat, crop_tensor, locality_aware_nms and
deformable_roi_pooling."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidType

L = fluid.layers


def _data(name, shape, dtype, lod_level=0):
    return L.data(name=name, shape=shape, dtype=dtype, lod_level=lod_level)


@pytest.mark.parametrize("call", [
    lambda: L.less_than(_data("x", [2], "int32"), _data("y", [2], "int32"), force_cpu=1),
    lambda: L.less_equal(_data("x", [2], "int32"), _data("y", [2], "int32"), cond=1),
    lambda: L.logical_and(_data("x", [2], "bool"), _data("a", [2], "int32")),
    lambda: L.logical_or(_data("a", [2], "int32"), _data("y", [2], "bool")),
    lambda: L.logical_xor(_data("x", [2], "bool"), _data("y", [2], "bool"), out=1),
    lambda: L.logical_not(_data("a", [2], "int32")),
    lambda: L.assign(_data("u", [4], "uint8")),
    lambda: L.assign(np.ones((2, 2), "float64")),
    lambda: L.assign(np.ones((2, 2), "uint8")),
    lambda: L.cast(_data("x", [4], "int32"), "int16"),
    lambda: L.fill_constant([1], "int16", 5),
    lambda: L.fill_constant([1], "uint8", 5),
    lambda: L.fill_constant([1], "float64", 5, out=_data("x", [1], "int32")),
    lambda: L.ones([10], "int8"),
    lambda: L.elementwise_add(_data("x", [3], "uint8"), _data("y", [3], "uint8")),
    lambda: L.elementwise_mul(_data("x", [3], "float32"), _data("y", [3], "bool")),
    lambda: L.fc(_data("x", [4], "int32"), size=1),
    lambda: L.embedding(_data("i", [1], "int64"), size=(10, 4), dtype="int64"),
    lambda: fluid.embedding(_data("i", [1], "float32"), size=(10, 4)),
    lambda: fluid.embedding(_data("i", [1], "int64"), size=(10, 4), dtype="int64"),
    lambda: L.lod_reset(_data("x", [4], "float32"), _data("y", [4], "int64")),
    lambda: L.concat([_data("x", [4], "uint8"), _data("y", [4], "uint8")]),
    lambda: L.concat([_data("x", [4], "float32")], axis=3.2),
    lambda: L.crop_tensor(_data("x", [2, 3, 6, 6], "float32"), shape=3),
    lambda: L.crop_tensor(_data("x", [2, 3, 6, 6], "float32"), shape=[2, 2.0, 3, 3]),
    lambda: L.slice(_data("x", [3, 4], "float32"), axes=[0], starts=0, ends=[1]),
], ids=lambda call: "")
def test_a_wrong_type_or_dtype_is_a_type_error(programs, call):
    with pytest.raises(InvalidType):
        call()


def test_locality_aware_nms_takes_float_thresholds_only(programs):
    boxes = _data("b", [2, 4], "float32")
    scores = _data("s", [1, 2], "float32")
    with pytest.raises(InvalidType, match="score_threshold"):
        L.locality_aware_nms(boxes, scores, 1, 400, 200)
    with pytest.raises(InvalidType, match="nms_top_k"):
        L.locality_aware_nms(boxes, scores, 1.0, 400.5, 200)
    L.locality_aware_nms(boxes, scores, 1.0, 400, 200)


def test_deformable_roi_pooling_takes_group_size_as_a_list(programs):
    x = _data("x", [3, 4, 4], "float32")
    rois = _data("rois", [4], "float32", lod_level=1)
    trans = _data("trans", [2, 2, 2], "float32")
    with pytest.raises(InvalidType, match="group_size"):
        L.deformable_roi_pooling(x, rois, trans, group_size=1, no_trans=True)


def test_what_the_layers_still_accept(programs):
    main, _ = programs
    x, y = _data("x", [2], "int32"), _data("y", [2], "int32")
    L.less_than(x, y, force_cpu=True)
    L.logical_not(_data("b", [2], "bool"))
    L.assign(np.ones((2, 2), "float32"))
    L.assign([1.5, 2.5])  # Python floats become a float32 constant
    L.cast(x, "int8")
    L.fill_constant([1], "float64", 5, out=_data("f", [1], "float64"))
    L.lod_reset(_data("v", [4], "float32"), _data("w", [4], "int64", lod_level=1))
    L.crop_tensor(_data("c", [3, 6, 6], "float32"), shape=[2, -1, 3, 3])
    types = [op.type for op in main.global_block().ops]
    assert types.count("less_than") == 1 and "lod_reset" in types


def test_concat_of_a_tensor_array_joins_its_items(programs):
    main, _ = programs
    array = L.create_array("float32")
    zero = L.fill_constant([1], "int64", 0)
    x = L.assign(np.arange(6, dtype="float32").reshape(2, 3))
    for k in range(3):
        L.array_write(x, zero + k, array)
    out = L.concat(array, axis=1)
    single = L.concat(x)  # a single tensor is a list of one
    got, same = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[out, single])
    np.testing.assert_array_equal(got, np.tile(np.arange(6).reshape(2, 3), (1, 3)))
    np.testing.assert_array_equal(same, np.arange(6).reshape(2, 3))
