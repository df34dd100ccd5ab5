"""Programs of a chosen size for the front-end tests and render timings."""
import fluid_nb as fluid


def deep_mlp(layers, grow=0):
    """A trained MLP: ``layers`` fc+relu layers, a square loss, backward and SGD ops (about
    10 ops per layer). With ``grow`` > 0 returns ``(program, add_ops)`` where ``add_ops()``
    appends ``grow`` more forward ops (scale ops on the loss), as a later cell would."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[-1, 16], dtype="float32")
        y = fluid.data(name="y", shape=[-1, 1], dtype="float32")
        h = x
        for _ in range(layers):
            h = fluid.layers.fc(h, size=16, act="relu")
        pred = fluid.layers.fc(h, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)

    def add_ops():
        with fluid.program_guard(main, startup):
            out = loss
            for _ in range(grow):
                out = fluid.layers.scale(out, scale=0.5)
        return out

    return (main, add_ops) if grow else main
