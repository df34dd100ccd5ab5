"""The book's N-gram word model (examples/book/word2vec.py's network: four words through one
embedding table, joined, two fully connected layers, cross entropy, Adagrad) compiles and in
float64 trains as the interpreter does. With a dense table it compiles whole. With the
book's sparse table the lookups (whose layer marks them remote_prefetch, which only the
distributed transpiler reads), the join and its gradient and the losses are native code;
the sparse gradients (SelectedRows), their sum and the table's update run in the
interpreter, and so do the dense updates between the sum and the table's update: a
sparse gradient passes from one interpreted op to another only within one run of them.
With the book's L2 decay the table's gradient name holds the sparse sum, then the sum
plus the decay, dense: the compiled ops take it dense, and every update compiles."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native

from tests.native.same_steps import assert_same_losses, assert_same_persistables

WORDS, EMBED, HIDDEN, STEPS = 30, 8, 16, 4
CONTEXT = ["firstw", "secondw", "thirdw", "fourthw"]


def _ngram_model(is_sparse, decay):
    words = [fluid.data(name=name, shape=[-1, 1], dtype="int64") for name in CONTEXT]
    next_word = fluid.data(name="nextw", shape=[-1, 1], dtype="int64")
    embeddings = [fluid.layers.embedding(input=w, size=[WORDS, EMBED], dtype="float64",
                                         is_sparse=is_sparse, param_attr="shared_w")
                  for w in words]
    hidden = fluid.layers.fc(input=fluid.layers.concat(input=embeddings, axis=1),
                             size=HIDDEN, act="sigmoid")
    predict = fluid.layers.fc(input=hidden, size=WORDS, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=next_word))
    regularizer = fluid.regularizer.L2DecayRegularizer(8e-4) if decay else None
    fluid.optimizer.Adagrad(learning_rate=0.5, regularization=regularizer).minimize(loss)
    return loss


def _feeds():
    rng = np.random.RandomState(4)
    return [{name: rng.randint(0, WORDS, (8, 1)).astype("int64") for name in CONTEXT + ["nextw"]}
            for _ in range(STEPS)]


@pytest.mark.parametrize("is_sparse, decay", [(False, False), (True, False), (True, True)],
                         ids=["dense table", "sparse table", "sparse table, L2 decay"])
def test_the_ngram_model_compiles_and_trains_as_the_interpreter(is_sparse, decay):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = _ngram_model(is_sparse, decay)
    feeds = _feeds()
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed=feeds[0], fetch_list=[loss], scope=compiled)
    ops = main.global_block().ops
    lookups = [op for op in ops if op.type.startswith("lookup_table")
               and not op.type.endswith("_grad")]
    assert len(lookups) == 4 and all(op.attrs["remote_prefetch"] == is_sparse
                                     for op in lookups)
    types = set(program.source.op_types.values())
    assert {lookups[0].type, "concat", "concat_grad", "cross_entropy2",
            "cross_entropy_grad2"} <= types
    fallen = {index: (op_type, why) for index, op_type, why in program.source.fallbacks}
    if not is_sparse:
        assert fallen == {} and "adagrad" in types
    elif not decay:
        table_update = next(i for i, op in enumerate(ops) if op.type == "adagrad"
                            and list(op.inputs["Param"]) == ["shared_w"])
        total = next(i for i, op in enumerate(ops) if op.type == "sum")
        assert {fallen[i][0] for i in fallen} == {lookups[0].type + "_grad", "sum", "adagrad"}
        assert fallen[table_update][1] == "a sparse gradient"
        assert all(fallen[i][0] == "adagrad" and fallen[i][1].startswith("between interpreted")
                   for i in range(total + 1, table_update))
    else:  # the book's: the decay is added to the table's summed sparse gradient under its
        # own name, which the program then holds dense, and every update compiles
        assert {fallen[i][0] for i in fallen} == {lookups[0].type + "_grad", "sum"}
        assert "adagrad" in types
    assert_same_losses(exe, main, program, loss, feeds, interpreted, compiled, rtol=1e-10)
    assert_same_persistables(main, compiled, interpreted, rtol=1e-9, atol=1e-12)
