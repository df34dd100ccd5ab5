"""Index, shape and layout layers (fluid.layers.expand, flatten, gather_nd, scatter, pad2d,
strided_slice, crop_tensor, ...) build Fluid 1.8's ops and agree with NumPy; the shape
layers take Variables where Fluid 1.8 takes them."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument

rng = np.random.RandomState(5)


def r(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def build_and_run(fn, feed, startup_too=True):
    """Build ``fn()`` (returning the Variables to fetch) in fresh programs, run them and
    return (main program, fetched arrays)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = fn()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe.run(main, feed=feed, fetch_list=list(outs), scope=scope)


def op_types(program):
    return [op.type for op in program.global_block().ops]


def the_op(program, op_type):
    (op,) = [op for op in program.global_block().ops if op.type == op_type]
    return op


X = r(2, 3, 4)


def data_x():
    return fluid.data(name="x", shape=[2, 3, 4], dtype="float32")


def int_value(value, dtype="int32"):
    return layers.fill_constant([1], dtype, value)


# --- tensor-valued arguments of the shape layers -------------------------------------------
def test_slice_takes_starts_and_ends_as_variables():
    def net():
        x = data_x()
        starts = layers.assign(np.array([1, 0], "int32"))
        ends = layers.assign(np.array([2, 3], "int32"))
        return layers.slice(x, axes=[0, 2], starts=starts, ends=ends)
    main, (out,) = build_and_run(net, {"x": X})
    np.testing.assert_array_equal(out, X[1:2, :, 0:3])
    op = the_op(main, "slice")
    assert op.input("StartsTensor") and op.input("EndsTensor")
    assert op.attr("infer_flags") == [-1, -1]


def test_slice_takes_lists_holding_variables():
    def net():
        x = data_x()
        return layers.slice(x, axes=[1, 2], starts=[int_value(1), 1], ends=[3, int_value(-1)])
    main, (out,) = build_and_run(net, {"x": X})
    np.testing.assert_array_equal(out, X[:, 1:3, 1:-1])
    op = the_op(main, "slice")
    assert len(op.input("StartsTensorList")) == 2 and len(op.input("EndsTensorList")) == 2
    assert op.attr("starts") == [-1, 1] and op.attr("ends") == [3, -1]
    assert op.attr("infer_flags") == [-1, -1]


def test_split_takes_sections_holding_a_variable():
    def net():
        x = data_x()
        return layers.split(x, num_or_sections=[1, int_value(2), -1], dim=2)
    main, outs = build_and_run(net, {"x": X})
    for got, want in zip(outs, np.split(X, [1, 3], axis=2)):
        np.testing.assert_array_equal(got, want)
    op = the_op(main, "split")
    assert len(op.input("SectionsTensorList")) == 3
    assert op.attr("sections") == [1, -1, -1]


def test_split_takes_dim_as_a_variable():
    def net():
        x = data_x()
        return layers.split(x, num_or_sections=3, dim=int_value(1))
    main, outs = build_and_run(net, {"x": X})
    for got, want in zip(outs, np.split(X, 3, axis=1)):
        np.testing.assert_array_equal(got, want)
    assert the_op(main, "split").input("AxisTensor")


@pytest.mark.parametrize("axes", [1, [0, 3]])
def test_unsqueeze_takes_an_int_or_a_list(axes):
    def net():
        return layers.unsqueeze(data_x(), axes=axes)
    _, (out,) = build_and_run(net, {"x": X})
    want = X
    for a in ([axes] if isinstance(axes, int) else axes):
        want = np.expand_dims(want, a)
    np.testing.assert_array_equal(out, want)


def test_unsqueeze_takes_axes_as_a_variable_or_a_list_holding_variables():
    def net():
        x = data_x()
        whole = layers.unsqueeze(x, axes=layers.assign(np.array([0, 2], "int32")))
        mixed = layers.unsqueeze(x, axes=[int_value(1), 4])
        return whole, mixed
    main, (whole, mixed) = build_and_run(net, {"x": X})
    assert whole.shape == (1, 2, 1, 3, 4) and mixed.shape == (2, 1, 3, 4, 1)
    ops = [op for op in main.global_block().ops if op.type == "unsqueeze2"]
    assert ops[0].input("AxesTensor") and len(ops[1].input("AxesTensorList")) == 2


def test_reshape_takes_a_shape_list_holding_variables():
    def net():
        return layers.reshape(data_x(), shape=[int_value(4), -1])
    main, (out,) = build_and_run(net, {"x": X})
    np.testing.assert_array_equal(out, X.reshape(4, 6))
    assert len(the_op(main, "reshape2").input("ShapeTensor")) == 2


# --- the new layers against NumPy ------------------------------------------------------------
@pytest.mark.parametrize("times", ["ints", "variable", "mixed"])
def test_expand_tiles_by_ints_a_variable_or_a_list_holding_variables(times):
    def net():
        x = data_x()
        if times == "ints":
            return layers.expand(x, [2, 1, 3])
        if times == "variable":
            return layers.expand(x, layers.assign(np.array([2, 1, 3], "int32")))
        return layers.expand(x, [int_value(2), 1, 3])
    main, (out,) = build_and_run(net, {"x": X})
    np.testing.assert_array_equal(out, np.tile(X, (2, 1, 3)))
    op = the_op(main, "expand")
    slot = {"ints": None, "variable": "ExpandTimes", "mixed": "expand_times_tensor"}[times]
    if slot:
        assert op.input(slot)
    else:
        assert op.attr("expand_times") == [2, 1, 3]


def test_expand_as_flatten_and_unstack():
    def net():
        x = data_x()
        target = fluid.data(name="t", shape=[4, 3, 8], dtype="float32")
        return [layers.expand_as(x, target), layers.flatten(x, axis=2)] + layers.unstack(x, 1)
    main, outs = build_and_run(net, {"x": X, "t": np.zeros((4, 3, 8), "float32")})
    np.testing.assert_array_equal(outs[0], np.tile(X, (2, 1, 2)))
    np.testing.assert_array_equal(outs[1], X.reshape(6, 4))
    for k in range(3):
        np.testing.assert_array_equal(outs[2 + k], X[:, k])
    assert the_op(main, "flatten2").output("XShape")


def test_gather_nd_scatter_and_scatter_nd():
    index = np.array([[1, 2], [0, 0]], "int64")
    ids = np.array([1, 0], "int64")
    updates = r(2, 4)

    def net():
        x = data_x()
        idx = fluid.data(name="idx", shape=[2, 2], dtype="int64")
        rows = fluid.data(name="rows", shape=[2], dtype="int64")
        upd = fluid.data(name="upd", shape=[2, 4], dtype="float32")
        m = layers.reshape(x, [6, 4])
        return [layers.gather_nd(x, idx), layers.scatter(m, rows, upd),
                layers.scatter(m, rows, upd, overwrite=False),
                layers.scatter_nd_add(x, idx, upd), layers.scatter_nd(idx, upd, [2, 3, 4])]
    _, outs = build_and_run(net, {"x": X, "idx": index, "rows": ids, "upd": updates})
    np.testing.assert_array_equal(outs[0], X[[1, 0], [2, 0]])
    want = X.reshape(6, 4).copy()
    want[ids] = updates
    np.testing.assert_array_equal(outs[1], want)
    np.testing.assert_array_equal(outs[2], want)
    added = X.copy()
    added[1, 2] += updates[0]
    added[0, 0] += updates[1]
    np.testing.assert_allclose(outs[3], added)
    scattered = np.zeros((2, 3, 4), "float32")
    scattered[1, 2], scattered[0, 0] = updates[0], updates[1]
    np.testing.assert_array_equal(outs[4], scattered)


def test_strided_slice_with_ints_and_a_list_holding_a_variable():
    def net():
        x = data_x()
        plain = layers.strided_slice(x, axes=[1, 2], starts=[0, 3], ends=[3, 0],
                                     strides=[2, -1])
        mixed = layers.strided_slice(x, axes=[2], starts=[int_value(1)], ends=[4], strides=[2])
        return plain, mixed
    main, (plain, mixed) = build_and_run(net, {"x": X})
    np.testing.assert_array_equal(plain, X[:, 0:3:2, 3:0:-1])
    np.testing.assert_array_equal(mixed, X[:, :, 1:4:2])
    assert plain.shape == (2, 2, 3)
    ops = [op for op in main.global_block().ops if op.type == "strided_slice"]
    assert ops[1].input("StartsTensorList") and ops[1].attr("infer_flags") == [-1]


def test_pad_pad2d_pad_constant_like_crop_and_crop_tensor():
    image = r(1, 2, 3, 4)

    def net():
        x = data_x()
        img = fluid.data(name="img", shape=[1, 2, 3, 4], dtype="float32")
        small = fluid.data(name="small", shape=[1, 2, 2], dtype="float32")
        return [layers.pad(x, [0, 1, 1, 0, 0, 2], pad_value=9.0),
                layers.pad2d(img, [1, 1, 2, 0], mode="reflect"),
                layers.pad2d(img, layers.assign(np.array([0, 1, 1, 1], "int32")), mode="edge",
                             data_format="NHWC"),
                layers.pad_constant_like(x, small, pad_value=-1.0),
                layers.crop(x, shape=[1, 2, 2], offsets=[1, 1, 2]),
                layers.crop(x, shape=small),
                layers.crop_tensor(x, shape=[-1, int_value(2), 3], offsets=[1, 0, int_value(1)])]
    small = r(1, 2, 2)
    _, outs = build_and_run(net, {"x": X, "img": image, "small": small})
    np.testing.assert_array_equal(outs[0], np.pad(X, [(0, 1), (1, 0), (0, 2)],
                                                  constant_values=9.0))
    np.testing.assert_array_equal(outs[1], np.pad(image, [(0, 0), (0, 0), (1, 1), (2, 0)],
                                                  mode="reflect"))
    np.testing.assert_array_equal(outs[2], np.pad(image, [(0, 0), (0, 1), (1, 1), (0, 0)],
                                                  mode="edge"))
    np.testing.assert_array_equal(outs[3], np.pad(small, [(0, 1), (0, 1), (0, 2)],
                                                  constant_values=-1.0))
    np.testing.assert_array_equal(outs[4], X[1:2, 1:3, 2:4])
    np.testing.assert_array_equal(outs[5], X[0:1, 0:2, 0:2])
    np.testing.assert_array_equal(outs[6], X[1:, 0:2, 1:4])


def test_multiplex_and_shard_index():
    a, b = r(3, 2), r(3, 2)

    def net():
        xa = fluid.data(name="a", shape=[3, 2], dtype="float32")
        xb = fluid.data(name="b", shape=[3, 2], dtype="float32")
        ids = fluid.data(name="ids", shape=[3, 1], dtype="int32")
        labels = fluid.data(name="labels", shape=[4, 1], dtype="int64")
        return (layers.multiplex([xa, xb], ids),
                layers.shard_index(labels, index_num=20, nshards=2, shard_id=1))
    labels = np.array([[1], [10], [15], [19]], "int64")
    _, (mixed, local) = build_and_run(net, {"a": a, "b": b, "labels": labels,
                                           "ids": np.array([[1], [0], [1]], "int32")})
    np.testing.assert_array_equal(mixed, np.stack([b[0], a[1], b[2]]))
    np.testing.assert_array_equal(local, [[-1], [0], [5], [9]])


def test_tensor_array_to_tensor_and_stack_of_an_array_train_through_the_array():
    def net():
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        x.stop_gradient = False
        array = layers.create_array("float32")
        for k in range(3):
            layers.array_write(layers.scale(x, float(k + 1)),
                               layers.fill_constant([1], "int64", k), array=array)
        joined, sizes = layers.tensor_array_to_tensor(array, axis=1)
        stacked = layers.stack(array, axis=0)
        loss = layers.reduce_sum(joined) + layers.reduce_sum(stacked * stacked)
        fluid.backward.append_backward(loss)
        return joined, sizes, stacked, main_grad_name(x)
    x = r(2, 3)
    main, (joined, sizes, stacked, dx) = build_and_run(net, {"x": x})
    np.testing.assert_allclose(joined, np.concatenate([x, 2 * x, 3 * x], 1))
    np.testing.assert_array_equal(sizes, [3, 3, 3])
    np.testing.assert_allclose(stacked, np.stack([x, 2 * x, 3 * x]))
    # d/dx of sum(k x) + sum((k x)^2) over k = 1..3
    np.testing.assert_allclose(dx, 6 + 2 * 14 * x, rtol=1e-5)
    assert "stack" not in op_types(main)  # an array is stacked by tensor_array_to_tensor


def main_grad_name(var):
    return var.block.var(var.name + "@GRAD")


def test_lod_append_adds_a_level():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[6, 1], dtype="float32")
        out = layers.lod_append(x, [0, 1, 3, 4, 6])
    op = the_op(main, "lod_reset")
    assert op.attr("append") is True and op.attr("target_lod") == [0, 1, 3, 4, 6]
    exe = fluid.Executor(fluid.CPUPlace())
    (got,) = exe.run(main, feed={"x": np.arange(6, dtype="float32").reshape(6, 1)},
                     fetch_list=[out], return_numpy=False, scope=fluid.Scope())
    assert got.lod() == [[0, 1, 3, 4, 6]]


def test_hash_cvm_and_filter_by_instag():
    from fluid_nb.ops.features import xxh64
    ids = np.array([[3, 5], [7, 1]], "int64")
    counts = np.abs(r(2, 4)) * 5
    ins = r(3, 2)
    tags = fluid.create_lod_tensor(np.array([[1], [2], [5], [2]], "int64"), [[1, 2, 1]],
                                   fluid.CPUPlace())

    def net():
        x = fluid.data(name="ids", shape=[2, 2], dtype="int64")
        feats = fluid.data(name="feats", shape=[2, 4], dtype="float32")
        show_click = fluid.data(name="show_click", shape=[2, 2], dtype="float32")
        rows = fluid.data(name="ins", shape=[3, 2], dtype="float32")
        tag = fluid.data(name="tags", shape=[-1, 1], dtype="int64", lod_level=1)
        keep = layers.assign(np.array([5], "int64"))
        kept, weight = layers.filter_by_instag(rows, tag, keep, is_lod=False)
        return [layers.hash(x, hash_size=1000, num_hash=2),
                layers.continuous_value_model(feats, show_click, use_cvm=False), kept, weight]
    _, (hashed, cvm, kept, weight) = build_and_run(
        net, {"ids": ids, "feats": counts, "show_click": counts[:, :2], "ins": ins,
              "tags": tags})
    want = [[[xxh64(row.tobytes(), k) % 1000] for k in range(2)] for row in ids]
    np.testing.assert_array_equal(hashed, want)
    np.testing.assert_array_equal(cvm, counts[:, 2:])
    np.testing.assert_array_equal(kept, ins[1:2])
    np.testing.assert_array_equal(weight, [[1.0]])


def test_autoincreased_step_counter_counts_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        counter = layers.autoincreased_step_counter(begin=5, step=2)
        again = layers.autoincreased_step_counter()
    assert again is counter and counter.persistable and counter.name == "@STEP_COUNTER@"
    assert main.global_block().ops[0].type == "increment"
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    seen = [int(exe.run(main, fetch_list=[counter], scope=scope)[0][0]) for _ in range(3)]
    assert seen == [6, 8, 10]


def test_get_tensor_from_selected_rows_refuses_a_dense_variable():
    from fluid_nb.errors import InvalidType
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        with pytest.raises(InvalidType, match="get_tensor_from_selected_rows: x expected"):
            layers.get_tensor_from_selected_rows(data_x())


def test_merge_selected_rows_layer_sums_repeated_rows_of_a_sparse_gradient():
    def net():
        ids = fluid.data(name="ids", shape=[4, 1], dtype="int64")
        emb = layers.embedding(ids, size=[5, 2], is_sparse=True,
                               param_attr=fluid.ParamAttr(name="emb_w"))
        fluid.backward.append_backward(layers.reduce_sum(emb))
        grad = main_grad_name(fluid.default_main_program().global_block().var("emb_w"))
        merged = layers.merge_selected_rows(grad)
        return layers.get_tensor_from_selected_rows(merged)
    _, (dense,) = build_and_run(net, {"ids": np.array([[1], [3], [1], [1]], "int64")})
    np.testing.assert_array_equal(dense, [[3, 3], [1, 1]])


@pytest.mark.parametrize("call, words", [
    (lambda x: layers.flatten(x, axis=4), "flatten: axis expected in [0, 3]"),
    (lambda x: layers.pad(x, [1, 1]), "pad: paddings expected 6 ints"),
    (lambda x: layers.pad2d(x, mode="wrap"), "pad2d: mode expected one of"),
    (lambda x: layers.expand(x, [2, 0, 1]), "expand: expand_times expected"),
    (lambda x: layers.shard_index(x, 10, 2, 2), "shard_index: shard_id expected in [0, 2)"),
    (lambda x: layers.crop_tensor(x, shape=[1, 0, 2]), "crop_tensor: shape expected"),
    (lambda x: layers.strided_slice(x, [0], [0], [1], [1, 1]), "strided_slice: strides"),
])
def test_bad_arguments_name_the_layer(call, words):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        with pytest.raises(InvalidArgument) as info:
            call(data_x())
    assert words in str(info.value)


def test_programs_of_the_new_layers_survive_the_program_file_codec():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = data_x()
        ids = fluid.data(name="ids", shape=[2, 2], dtype="int64")
        layers.hash(ids, hash_size=2 ** 40, num_hash=2)
        layers.pad2d(layers.unsqueeze(x, 0), [1, 0, 2, 1], mode="edge", data_format="NHWC")
        layers.strided_slice(x, [1], [int_value(0)], [3], [2])
        layers.crop_tensor(x, shape=[1, -1, 2])
        layers.flatten(layers.expand(x, [1, 2, 1]))
    copy = fluid.Program.parse_from_string(main.desc.serialize_to_string())
    for op, again in zip(main.global_block().ops, copy.global_block().ops):
        assert op.type == again.type and op.attrs == again.attrs
    assert the_op(copy, "hash").attr("mod_by") == 2 ** 40
