"""A counter left differentiable (``i.stop_gradient = False``) indexes tensor-array writes
and reads; backward steps it back with ``increment(-step)`` after each grad op that used
it, so each read's gradient lands on the item it read (Fluid's increment grad maker)."""
import numpy as np

import fluid_nb as fluid

L = fluid.layers


def test_array_gradients_follow_a_counter_stepped_back_in_backward():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xs = [L.data(name=f"x{k}", shape=[3], dtype="float32") for k in range(3)]
        for x in xs:
            x.stop_gradient = False
        i = L.zeros(shape=[1], dtype="int64")
        i.stop_gradient = False
        array = L.array_write(xs[0], i)
        for x in xs[1:]:
            i = L.increment(i)
            L.array_write(x, i, array)
        j = L.zeros(shape=[1], dtype="int64")
        j.stop_gradient = False
        reads = [L.array_read(array, j)]
        for _ in xs[1:]:
            j = L.increment(j)
            reads.append(L.array_read(array, j))
        # weight read k by k + 1, so a read's gradient on the wrong item shows
        loss = L.sums([L.scale(L.reduce_sum(r), scale=float(k + 1))
                       for k, r in enumerate(reads)])
        fluid.backward.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert types.count("increment") == 8  # 4 forward, 4 inverses
    feed = {f"x{k}": np.ones((2, 3), "float32") for k in range(3)}
    grads = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed,
                                                 fetch_list=[f"x{k}@GRAD" for k in range(3)])
    for k, grad in enumerate(grads):
        np.testing.assert_allclose(grad, np.full((2, 3), k + 1.0))


def test_a_counter_that_stops_gradients_gets_no_inverse():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        x.stop_gradient = False
        i = L.zeros(shape=[1], dtype="int64")
        array = L.array_write(x, i)
        loss = L.reduce_sum(L.array_read(array, L.increment(L.zeros([1], "int64"),
                                                              value=0)))
        fluid.backward.append_backward(loss)
    assert [op.type for op in main.global_block().ops].count("increment") == 1
