"""Argument checks that Fluid 1.8's layers make with ``check_type`` / ``check_dtype`` /
``assert``: a wrong kind of value is a TypeError (InvalidType), an asserted value an
AssertionError (InvalidAssertion); both are InvalidArgument as well."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidAssertion, InvalidType

L = fluid.layers


@pytest.fixture(autouse=True)
def fresh_programs():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        yield


def test_a_float_where_fluid_type_checks_an_int_is_a_type_error():
    ids = L.data(name="ids", shape=[4, 1], append_batch_size=False, dtype="int32")
    with pytest.raises(InvalidType, match="one_hot: depth"):
        L.one_hot(ids, 4.1)
    with pytest.raises(InvalidType):
        L.one_hot(ids, np.array([4]))
    with pytest.raises(InvalidArgument, match="one_hot: depth"):  # a wrong value stays one
        L.one_hot(ids, 0)
    x = L.data(name="x", shape=[4, 6], dtype="float32")
    with pytest.raises(InvalidType, match="split: dim"):
        L.split(x, 2, dim=3.2)


def test_one_hot_refuses_float_ids_when_called():
    floats = L.data(name="f", shape=[4], append_batch_size=False, dtype="float32")
    with pytest.raises(TypeError, match="one_hot_v2: input's dtype"):
        fluid.one_hot(floats, depth=4)


def test_matmul_takes_floats_only():
    ints = L.data(name="i", shape=[10, 10], dtype="int32")
    with pytest.raises(TypeError, match="matmul: x's dtype"):
        L.matmul(ints, ints)
    halves = L.data(name="h", shape=[2, 2], dtype="float16")
    assert L.matmul(halves, halves).dtype == fluid.core.VarDesc.VarType.FP16


def test_sums_checks_every_variable_of_its_list():
    bytes_ = [L.data(name=f"b{i}", shape=[10], dtype="int8") for i in range(2)]
    with pytest.raises(TypeError, match="sums: input's dtype"):
        L.sums(bytes_)


def test_resize_scale_of_another_type_is_a_type_error():
    img = L.data(name="img", shape=[3, 6, 6], dtype="float32")
    with pytest.raises(InvalidType, match="resize_nearest: scale"):
        L.resize_nearest(img, scale="scale")
    with pytest.raises(InvalidArgument, match="scale expected > 0"):
        L.resize_nearest(img, scale=-0.3)
    with pytest.raises(InvalidType, match="actual_shape"):
        L.resize_nearest(img, out_shape=[4, 4], actual_shape=[4, 4])


def test_float_only_scales():
    x = L.data(name="x", shape=[4, 8, 8], dtype="float32")
    rois = L.data(name="rois", shape=[4], dtype="float32", lod_level=1)
    with pytest.raises(InvalidType, match="prroi_pool: spatial_scale expected a float"):
        L.prroi_pool(x, rois, 2, 7, 7)
    quads = L.data(name="quads", shape=[8], dtype="float32", lod_level=1)
    with pytest.raises(InvalidType, match="spatial_scale expected a float"):
        L.roi_perspective_transform(x, quads, 7, 7, 2)
    with pytest.raises(InvalidType, match="transformed_height"):
        L.roi_perspective_transform(x, quads, 7.5, 7)


def test_reshape_asserts_its_shape_and_types_actual_shape():
    x = L.data(name="x", shape=[5, 10], append_batch_size=False, dtype="float32")
    with pytest.raises(InvalidType, match="actual_shape"):
        L.reshape(x, shape=[25, 2], actual_shape=1)
    for shape in ([-1, -1, 5], [2, 5, 5, 0], [-1, -2, 5]):
        with pytest.raises(AssertionError):
            L.reshape(x, shape)
    with pytest.raises(InvalidAssertion, match="at most one -1"):
        L.reshape(x, [-1, -1])
    assert L.reshape(x, [0, -1]).shape == (5, 10)


def test_split_and_merge_lod_tensor_check_their_argument_types():
    x = L.data(name="x", shape=[1], dtype="float32")
    mask = L.data(name="m", shape=[1], dtype="bool")
    with pytest.raises(TypeError, match="input"):
        L.split_lod_tensor(input=set(), mask=mask)
    with pytest.raises(TypeError, match="mask"):
        L.split_lod_tensor(input=x, mask=set())
    with pytest.raises(TypeError, match="level"):
        L.split_lod_tensor(input=x, mask=mask, level=None)
    with pytest.raises(TypeError, match="in_true"):
        L.merge_lod_tensor(in_true=1, in_false=x, x=x, mask=mask)


def test_an_unknown_dtype_spelling_is_a_type_error():
    with pytest.raises(InvalidType, match="'intt32'"):
        fluid.data(name="bad", shape=[1, 4], dtype="intt32")
    with pytest.raises(InvalidArgument):  # NumPy knows it, Fluid has no VarType for it
        fluid.data(name="obj", shape=[1], dtype=object)


def test_uniform_random_makes_floats_and_lives_in_layers_nn_too():
    with pytest.raises(TypeError, match="uniform_random: dtype's dtype"):
        L.uniform_random([2, 3], "int32")
    assert L.nn.uniform_random([2, 3], "float64").dtype == fluid.core.VarDesc.VarType.FP64
