"""A word-embedding regression whose table the servers keep: ``embedding(is_sparse=True)``
sends SelectedRows gradients (cut by ``split_selected_rows``) and the trainers read the
table's rows from the servers (``distributed_lookup_table``). Constant initial values, so a
single process starts where the servers do.

Run by ``fluid-nb launch`` (the role from PADDLE_TRAINING_ROLE; each trainer on its part of
every batch), or alone (single-process, whole batches); each prints ``losses [...]``, the
loss of every step."""
import json
import os

import numpy as np

import fluid_nb as fluid

STEPS, BATCH, ROWS = 12, 16, 1000


def network():
    words = fluid.data(name="words", shape=[-1, 1], dtype="int64")
    label = fluid.layers.data(name="label", shape=[1], dtype="float32")
    table = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1))
    emb = fluid.embedding(words, size=[ROWS, 16], is_sparse=True, param_attr=table)
    weight = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2))
    pred = fluid.layers.fc(input=emb, size=1, param_attr=weight)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=label))
    fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return loss


def main():
    program, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(program, startup):
        loss = network()
    rng = np.random.RandomState(0)
    words = rng.randint(0, ROWS, size=(STEPS, BATCH, 1)).astype("int64")
    labels = (words % 7 / 7.0).astype("float32")
    role = os.getenv("PADDLE_TRAINING_ROLE")
    part, parts = int(os.getenv("PADDLE_TRAINER_ID", "0")), 1
    exe = fluid.Executor(fluid.CPUPlace())
    if role is not None:
        parts = int(os.environ["PADDLE_TRAINERS_NUM"])
        t = fluid.DistributeTranspiler()
        t.transpile(part, program=program, pservers=os.environ["PADDLE_PSERVERS_IP_PORT_LIST"],
                    trainers=parts, startup_program=startup)
        if role == "PSERVER":
            endpoint = os.environ["PADDLE_CURRENT_ENDPOINT"]
            server = t.get_pserver_program(endpoint)
            exe.run(t.get_startup_program(endpoint, server))
            exe.run(server)
            return
        program = t.get_trainer_program()
    exe.run(startup)
    losses = []
    for step in range(STEPS):
        rows = np.array_split(np.arange(BATCH), parts)[part]
        value, = exe.run(program, feed={"words": words[step][rows],
                                        "label": labels[step][rows]}, fetch_list=[loss])
        losses.append(float(value))
    exe.close()
    print("losses", json.dumps(losses), flush=True)


if __name__ == "__main__":
    main()
