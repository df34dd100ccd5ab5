"""Feeds as the Fluid 1.x book makes them: ``create_lod_tensor`` of lists of word ids gives
an [N, 1] tensor, fed into a ``fluid.data(shape=[None], lod_level=1)`` variable."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _bag_of_words():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.data(name="words", shape=[None], dtype="int64", lod_level=1)
        emb = fluid.embedding(input=words, size=[10, 4])
        pooled = fluid.layers.sequence_pool(emb, pool_type="sum")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, pooled


def test_ids_made_by_create_lod_tensor_feed_a_rank_one_sequence_variable():
    main, exe, scope, pooled = _bag_of_words()
    sentences = [[1, 2, 3], [4, 5]]
    tensor = fluid.create_lod_tensor(sentences, [[3, 2]], fluid.CPUPlace())
    assert tensor.shape() == [5, 1]
    (out,) = exe.run(main, feed={"words": tensor}, fetch_list=[pooled], scope=scope,
                     return_numpy=False)
    table = np.asarray(scope.find_var("embedding_0.w_0").value)
    np.testing.assert_allclose(np.asarray(out), [table[[1, 2, 3]].sum(0), table[[4, 5]].sum(0)],
                               rtol=1e-6)


def test_a_rank_difference_other_than_trailing_ones_is_still_refused():
    main, exe, scope, pooled = _bag_of_words()
    ids = (np.ones((5, 2), "int64"), [[0, 3, 5]])
    with pytest.raises(InvalidArgument, match="feed 'words': shape expected"):
        exe.run(main, feed={"words": ids}, fetch_list=[pooled], scope=scope)
