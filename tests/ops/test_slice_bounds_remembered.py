"""A slice whose bounds are attributes alone works its index out once per X's shape and
its attributes (``ops.shape._ATTR_SLICES``): every run after gives what NumPy's slicing
gives, for every shape the same attributes meet, and bounds that are refused are refused
at every run."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import shape as shape_ops
from fluid_nb.proto.paddle_versions import PADDLE_VERSION


def _run_slices(x, attrs_list):
    """Each attrs of ``attrs_list`` as a slice op of one program on ``x``, run twice."""
    main = fluid.Program()
    main.version = PADDLE_VERSION  # (a slice of every dim is 0-D, as in NumPy)
    block = main.global_block()
    block.create_var(name="x", shape=x.shape, dtype=x.dtype)
    outs = []
    for i, attrs in enumerate(attrs_list):
        name = f"out{i}"
        block.append_op(type="slice", inputs={"Input": ["x"]}, outputs={"Out": [name]},
                        attrs=dict(attrs))
        outs.append(name)
    exe = fluid.Executor(fluid.CPUPlace())
    return [exe.run(main, feed={"x": x}, fetch_list=outs, scope=fluid.Scope())
            for _ in range(2)]


def _attrs(axes, starts, ends, decrease=()):
    return {"axes": list(axes), "starts": list(starts), "ends": list(ends),
            "decrease_axis": list(decrease), "infer_flags": [1] * len(axes)}


SLICES = [
    (_attrs([1], [0], [4]), lambda a: a[:, 0:4]),
    (_attrs([0], [1], [2], [0]), lambda a: a[1]),
    (_attrs([0], [-1], [10 ** 9], [0]), lambda a: a[-1]),
    (_attrs([0, 1], [1, -3], [3, -1]), lambda a: a[1:3, -3:-1]),
    (_attrs([1], [2], [100]), lambda a: a[:, 2:]),
    (_attrs([1], [0], [1]), lambda a: a[:, 0:1]),
    (_attrs([1], [0], [1], [1]), lambda a: a[:, 0]),
    (_attrs([-1], [0], [1], [1]), lambda a: a[:, 0]),
    (_attrs([0, 1], [0, 0], [1, 1], [0, 1]), lambda a: a[0, 0]),
]


@pytest.mark.parametrize("shape", [(4, 8), (3, 5), (6, 3)])
def test_remembered_slices_give_numpys_slices_for_every_shape(shape):
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    for run in _run_slices(x, [attrs for attrs, _ in SLICES]):
        for got, (_, numpy_slice) in zip(run, SLICES):
            np.testing.assert_array_equal(got, numpy_slice(x), strict=True)


def test_the_same_attributes_on_another_shape_are_worked_out_again():
    attrs = _attrs([1], [1], [3])
    for shape in [(2, 5), (2, 3), (7, 2)]:
        x = np.ones(shape, "float32")
        (got,) = _run_slices(x, [attrs])[1]
        assert got.shape == x[:, 1:3].shape


def test_refused_bounds_are_refused_at_every_run():
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=(-1, 5), dtype="float32")
    block.append_op(type="slice", inputs={"Input": ["x"]}, outputs={"Out": ["out"]},
                    attrs=_attrs([0], [0], [2], [0]))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    (one,) = exe.run(main, feed={"x": np.ones((1, 5), "float32")}, fetch_list=["out"],
                     scope=scope)
    assert one.shape == (5,)
    for _ in range(2):  # (a decreased dim of size 2: refused, never remembered)
        with pytest.raises(InvalidArgument, match="decrease_axis"):
            exe.run(main, feed={"x": np.ones((3, 5), "float32")}, fetch_list=["out"],
                    scope=scope)


def test_the_memo_keeps_a_few_signatures():
    shape_ops._ATTR_SLICES.clear()
    x = np.ones((300, 2), "float32")
    _run_slices(x, [_attrs([0], [i], [i + 1]) for i in range(300)])
    assert 0 < len(shape_ops._ATTR_SLICES) <= 256


def test_live_indexes_read_their_remembered_slices():
    a = np.arange(32, dtype="float32").reshape(4, 8)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.data(name="x", shape=[4, 8], dtype="float32",
                              append_batch_size=False, value=a)
        for _ in range(3):
            np.testing.assert_array_equal(x[1].numpy(), a[1], strict=True)
            np.testing.assert_array_equal(x[:, 2:5].numpy(), a[:, 2:5], strict=True)
            # (every dim indexed: a [1] tensor in a Fluid 1.x program, as Fluid gives it)
            np.testing.assert_array_equal(x[-1, -2].numpy(), a[-1, -2:-1], strict=True)


def _strided(axes, starts, ends, strides, decrease=()):
    return dict(_attrs(axes, starts, ends, decrease), strides=list(strides))


STRIDED = [
    (_strided([0], [0], [10 ** 9], [2]), lambda a: a[::2]),
    (_strided([0], [0], [10 ** 9], [3]), lambda a: a[::3]),
    (_strided([1], [-1], [-10 ** 9], [-1]), lambda a: a[:, ::-1]),
    (_strided([1], [-1], [-10 ** 9], [-2]), lambda a: a[:, ::-2]),
    (_strided([0, 1], [1, 0], [2, 10 ** 9], [1, 2], [0]), lambda a: a[1, ::2]),
]


@pytest.mark.parametrize("shape", [(4, 8), (5, 3)])
def test_remembered_strided_slices_give_numpys_slices_for_every_shape(shape):
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=x.shape, dtype=x.dtype)
    for i, (attrs, _) in enumerate(STRIDED):
        block.append_op(type="strided_slice", inputs={"Input": ["x"]},
                        outputs={"Out": [f"out{i}"]}, attrs=dict(attrs))
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):
        got = exe.run(main, feed={"x": x}, fetch_list=[f"out{i}" for i in range(len(STRIDED))],
                      scope=fluid.Scope())
        for answer, (_, numpy_slice) in zip(got, STRIDED):
            np.testing.assert_array_equal(answer, numpy_slice(x), strict=True)
