"""Cross-check: a training program built and saved by fluid_nb trains in real Paddle.

    python tools/paddle_fixtures/check_in_paddle.py build OUT_DIR      # with fluid_nb
    paddle-venv/bin/python tools/paddle_fixtures/check_in_paddle.py paddle OUT_DIR

``build`` writes the main/startup ProgramDesc of an fc-relu-fc regression trained with Adam,
its initial parameters, 5 batches and fluid_nb's losses; ``paddle`` loads the programs with
PaddlePaddle 2.x, sets the same parameters, trains on the same batches and prints the largest
relative difference of the losses.
"""
import os
import sys

import numpy as np


def build(out):
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        hidden = fluid.layers.fc(input=x, size=8, act="relu")
        pred = fluid.layers.fc(input=hidden, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "main.pb"), "wb") as f:
        f.write(main.serialize_to_string())
    with open(os.path.join(out, "startup.pb"), "wb") as f:
        f.write(startup.serialize_to_string())
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    np.savez(os.path.join(out, "init.npz"), **{p.name: np.asarray(scope.find_var(p.name).value)
                                               for p in main.all_parameters()})
    rs = np.random.RandomState(0)
    xs = rs.uniform(-1, 1, (5, 16, 13)).astype("float32")
    ys = rs.uniform(-1, 1, (5, 16, 1)).astype("float32")
    np.savez(os.path.join(out, "data.npz"), x=xs, y=ys, loss_name=np.array(loss.name))
    losses = [float(exe.run(main, feed={"x": a, "y": b}, fetch_list=[loss], scope=scope)[0])
              for a, b in zip(xs, ys)]
    np.save(os.path.join(out, "fluid_nb_losses.npy"), np.array(losses))
    print("fluid_nb losses:", losses)


def paddle_side(out):
    import paddle
    paddle.enable_static()
    from paddle.base.framework import Program
    main = Program.parse_from_string(open(os.path.join(out, "main.pb"), "rb").read())
    startup = Program.parse_from_string(open(os.path.join(out, "startup.pb"), "rb").read())
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = paddle.static.global_scope()
    for name, value in np.load(os.path.join(out, "init.npz")).items():
        scope.find_var(name).get_tensor().set(value, paddle.CPUPlace())
    data = np.load(os.path.join(out, "data.npz"))
    losses = [float(np.asarray(exe.run(main, feed={"x": a, "y": b},
                                       fetch_list=[str(data["loss_name"])])[0]))
              for a, b in zip(data["x"], data["y"])]
    ours = np.load(os.path.join(out, "fluid_nb_losses.npy"))
    print("Paddle losses:  ", losses)
    print("largest relative difference:", float(np.max(np.abs(np.array(losses) - ours) / np.abs(ours))))


if __name__ == "__main__":
    {"build": build, "paddle": paddle_side}[sys.argv[1]](sys.argv[2])
