"""embedding(is_sparse=True): the weight gradient is SelectedRows (the rows the batch used),
and SGD and Adam's sparse updates give what the dense path gives where Paddle says so."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.tensor.dtypes import VarType


def _train(is_sparse, make_optimizer, steps=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        label = fluid.layers.data(name="label", shape=[1], dtype="float32")
        emb = fluid.layers.embedding(input=ids, size=[10, 4], is_sparse=is_sparse)
        pred = fluid.layers.fc(input=emb, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=label))
        make_optimizer().minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"ids": np.array([[1], [3], [1], [7]], "int64"),
            "label": np.array([[0.5], [-1.0], [2.0], [0.0]], "float32")}
    grads = []
    for _ in range(steps):
        grads.append(exe.run(main, feed=feed, fetch_list=["embedding_0.w_0@GRAD"],
                             scope=scope, return_numpy=False)[0])
    return main, np.asarray(scope.find_var("embedding_0.w_0").value), grads


def test_sparse_gradient_is_selected_rows_of_the_ids_used():
    main, _, grads = _train(True, lambda: fluid.optimizer.SGD(0.1), steps=1)
    assert main.global_block().var("embedding_0.w_0@GRAD").type == VarType.SELECTED_ROWS
    grad = grads[0]
    assert isinstance(grad, fluid.SelectedRows)
    assert grad.rows() == [1, 3, 1, 7] and grad.height() == 10


@pytest.mark.parametrize("make_optimizer", [
    lambda: fluid.optimizer.SGD(0.1),
    lambda: fluid.optimizer.Adam(0.01),
    lambda: fluid.optimizer.Momentum(0.1, momentum=0.9),
], ids=["sgd", "adam", "momentum"])
def test_sparse_updates_match_dense(make_optimizer):
    _, sparse, _ = _train(True, make_optimizer)
    _, dense, _ = _train(False, make_optimizer)
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)


def test_lazy_adam_leaves_unused_rows_alone():
    _, before, _ = _train(True, lambda: fluid.optimizer.SGD(0.0), steps=1)
    _, after, _ = _train(True, lambda: fluid.optimizer.Adam(0.01, lazy_mode=True))
    unused = [0, 2, 4, 5, 6, 8, 9]
    np.testing.assert_array_equal(after[unused], before[unused])
    assert not np.allclose(after[[1, 3, 7]], before[[1, 3, 7]])
