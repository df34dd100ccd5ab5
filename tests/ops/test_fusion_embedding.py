"""fused_embedding_seq_pool against the unfused lookup_table + sequence_pool(SUM) program it
stands for, with float64 finite-difference gradients, its sparse gradient, and the
``contrib.fused_embedding_seq_pool`` layer against ``embedding`` + ``sequence_pool``."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.tensor.tensor import SelectedRows

from .op_test import OpCase, assert_build_fails, check_output, table_tests
from .unfused import Unfused

rng = np.random.RandomState(33)

LOD = [[0, 3, 4, 6]]
VOCAB, E = 9, 4


def ids(*shape):
    return rng.randint(0, VOCAB, shape).astype("int64")


def pool_ref(lod):
    def ref(i, a):
        t = lod[0][-1]
        columns = int(np.prod(i["Ids"].shape[1:]))
        u = Unfused({"w": i["W"], "ids": (i["Ids"].reshape(t, columns, 1), lod)})
        rows = u.out("lookup_table", {"W": "w", "Ids": "ids"},
                     padding_idx=a.get("padding_idx", -1))
        flat = u.op("reshape2", {"X": rows}, ["Out", "XShape"], shape=[t, columns * E])["Out"]
        flat = u.out("lod_reset", {"X": flat}, target_lod=lod[0])
        (out,) = u.run(u.op("sequence_pool", {"X": flat}, ["Out"], pooltype="SUM")["Out"])
        return {"Out": out}
    return ref


def pool_case(name, id_shape=(6, 1), lod=LOD, grad=True, **attrs):
    return OpCase("fused_embedding_seq_pool",
                  {"W": rng.uniform(-1, 1, (VOCAB, E)).astype("float32"), "Ids": ids(*id_shape)},
                  attrs=attrs, lod={"Ids": lod}, ref=pool_ref(lod),
                  grad=["W"] if grad else [], name=name)


CASES = [
    pool_case("one_id_per_row"),
    pool_case("two_ids_per_row", id_shape=(6, 2, 1)),
    pool_case("padding", id_shape=(6, 2, 1), padding_idx=3),
    pool_case("empty_sequence", lod=[[0, 2, 2, 6]]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


DOUT = rng.uniform(-1, 1, (2, 2 * E)).astype("float32")


def _grad(is_sparse, padding_idx=-1):
    id_grid = np.array([[[1], [3]], [[3], [3]], [[0], [5]]], "int64")  # T = 3, two columns
    lod = [[0, 2, 3]]
    dout = DOUT
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="ids", shape=id_grid.shape, dtype="int64", lod_level=1)
    block.create_var(name="w", shape=(VOCAB, E), dtype="float32")
    block.create_var(name="dout", shape=dout.shape, dtype="float32")
    block.append_op(type="fused_embedding_seq_pool_grad",
                    inputs={"Ids": ["ids"], "W": ["w"], "Out@GRAD": ["dout"]},
                    outputs={"W@GRAD": ["dw"]},
                    attrs={"is_sparse": is_sparse, "padding_idx": padding_idx})
    (dw,) = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"ids": (id_grid, lod), "w": np.zeros((VOCAB, E), "float32"),
                       "dout": dout},
        fetch_list=["dw"], scope=fluid.Scope(), return_numpy=False)
    return dw, id_grid, dout


def test_sparse_gradient_has_one_row_per_looked_up_id():
    dense, id_grid, dout = _grad(False)
    sparse, _, _ = _grad(True)
    assert isinstance(sparse, SelectedRows)
    assert sparse.rows() == id_grid.reshape(-1).tolist()
    densified = np.zeros((VOCAB, E), "float32")
    np.add.at(densified, sparse.rows(), np.asarray(sparse.value))
    np.testing.assert_allclose(densified, np.asarray(dense), rtol=1e-6)
    # id 3 of the first sequence: twice in column 1, once in column 0
    want = dout[0, :E] * 1 + dout[0, E:] * 2
    np.testing.assert_allclose(np.asarray(dense)[3], want, rtol=1e-6)


def test_padding_ids_get_no_gradient():
    dense, _, _ = _grad(False, padding_idx=3)
    sparse, _, _ = _grad(True, padding_idx=3)
    assert not np.asarray(dense)[3].any()
    assert 3 not in sparse.rows()


# --- the contrib layer ------------------------------------------------------------------------
def _layer_program(fused, is_sparse):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="word", shape=[1], dtype="int64", lod_level=1)
        if fused:
            out = fluid.contrib.fused_embedding_seq_pool(words, size=[VOCAB, E],
                                                         param_attr="w", padding_idx=-2,
                                                         is_sparse=is_sparse)
        else:
            rows = fluid.layers.embedding(words, size=[VOCAB, E], param_attr="w",
                                          padding_idx=-2, is_sparse=is_sparse)
            out = fluid.layers.sequence_pool(rows, "sum")
        loss = fluid.layers.reduce_sum(out * out)
        fluid.backward.append_backward(loss)
    return main, startup, out


@pytest.mark.parametrize("is_sparse", [False, True])
def test_layer_matches_embedding_and_sequence_pool(is_sparse):
    words = fluid.create_lod_tensor(np.array([[1], [7], [2], [7], [4]], "int64"), [[3, 2]],
                                    fluid.CPUPlace())
    results = []
    for fused in (True, False):
        main, startup, out = _layer_program(fused, is_sparse)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        value, grad = exe.run(main, feed={"word": words}, fetch_list=[out, "w@GRAD"],
                              scope=scope, return_numpy=False)
        if isinstance(grad, SelectedRows):
            dense = np.zeros((VOCAB, E), "float32")
            np.add.at(dense, grad.rows(), np.asarray(grad.value))
            grad = dense
        results.append((np.asarray(value), np.asarray(grad)))
        op_types = [op.type for op in main.global_block().ops]
        assert ("fused_embedding_seq_pool" in op_types) == fused
    (fused_out, fused_grad), (plain_out, plain_grad) = results
    np.testing.assert_allclose(fused_out, plain_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_grad, plain_grad, rtol=1e-5, atol=1e-6)
    assert not fused_grad[VOCAB - 2].any()  # padding_idx -2 counts from the end


# --- argument errors ---------------------------------------------------------------------------
def test_fused_embedding_seq_pool_checks_its_inputs():
    w = np.zeros((VOCAB, E), "float32")
    assert_build_fails("fused_embedding_seq_pool", {"W": w, "Ids": ids(6, 2)}, {}, "Ids")
    assert_build_fails("fused_embedding_seq_pool", {"W": w, "Ids": ids(6, 1)},
                       {"combiner": "mean"}, "combiner")
    # the ids must hold sequences: LoD level 1
    assert_build_fails("fused_embedding_seq_pool", {"W": w, "Ids": ids(6, 1)}, {}, "LoD level")


def test_fused_embedding_seq_pool_refuses_ids_out_of_range():
    case = pool_case("range", grad=False)
    case.inputs["Ids"] = case.inputs["Ids"].copy()
    case.inputs["Ids"][2, 0] = VOCAB
    case.ref = None
    with pytest.raises(InvalidArgument, match="Ids"):
        check_output(case)


def test_layer_refuses_a_name_for_the_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(InvalidType, match="input"):
            fluid.contrib.fused_embedding_seq_pool("word", size=[VOCAB, E])
        words = fluid.layers.data(name="word", shape=[1], dtype="int64", lod_level=1)
        with pytest.raises(InvalidArgument, match="combiner"):
            fluid.contrib.fused_embedding_seq_pool(words, size=[VOCAB, E], combiner="max")
