"""Generate reference loss curves for training parity tests.

Output: tests/fixtures/paddle/training/<run>/
    init_params.npz    parameter values right after the startup program (keyed by name)
    final_params.npz   parameter values after the last step
    losses.npy         float64[STEPS], the fetched mean loss of every step
    main.pdmodel       ProgramDesc bytes of the training main program
    startup.pdmodel    ProgramDesc bytes of the startup program
    meta.json          params, optimizer, seeds, data recipe + sha256, op types, persistables
plus training/README.md describing the data recipes.

Networks use the classic Fluid op set: fc (mul + elementwise_add [+ act]),
square_error_cost (elementwise_sub + square), a raw ``cross_entropy`` op
(hard labels) and a raw ``mean`` op, both appended with LayerHelper exactly
like fluid.layers.cross_entropy / fluid.layers.mean used to (modern
paddle.mean would emit ``reduce_mean`` instead).

Run from the repo root:
    paddle-venv/bin/python tools/paddle_fixtures/gen_training.py
"""

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
static = paddle.static
from paddle.base.layer_helper import LayerHelper  # noqa: E402

STEPS = 50
PARAM_SEED = 90  # Program.random_seed of main and startup programs
FIT_A_LINE_DATA_SEED = 2024
MLP_DATA_SEED = 4242

# --------------------------------------------------------------------------
# Data.  The recipes below are copied verbatim into meta.json / README.md.
# --------------------------------------------------------------------------
FIT_A_LINE_RECIPE = """\
rs = np.random.RandomState(2024)
x = rs.uniform(-1.0, 1.0, (50, 20, 13)).astype(np.float32)      # [steps, batch, 13]
w_true = rs.uniform(-1.0, 1.0, (13, 1)).astype(np.float32)
noise = rs.normal(0.0, 0.1, (50, 20, 1)).astype(np.float32)
y = (np.matmul(x.astype(np.float64), w_true.astype(np.float64))
     + 0.5 + noise.astype(np.float64)).astype(np.float32)       # [steps, batch, 1]
# step s feeds {'x': x[s], 'y': y[s]}"""

MLP_RECIPE = """\
rs = np.random.RandomState(4242)
x = rs.uniform(0.0, 1.0, (50, 64, 784)).astype(np.float32)      # [steps, batch, 784]
teacher = rs.normal(0.0, 1.0, (784, 10))                         # float64
logits = np.matmul(x.astype(np.float64) - 0.5, teacher)         # [steps, batch, 10]
label = np.argmax(logits, axis=-1).astype(np.int64)[..., None]  # [steps, batch, 1] int64
# step s feeds {'x': x[s], 'label': label[s]}"""


def fit_a_line_data():
    ns = {"np": np}
    exec(FIT_A_LINE_RECIPE, ns)
    return {"x": ns["x"], "y": ns["y"]}


def mlp_data():
    ns = {"np": np}
    exec(MLP_RECIPE, ns)
    return {"x": ns["x"], "label": ns["label"]}


# --------------------------------------------------------------------------
# Fluid-style layers missing from the 2.6 Python API.
# --------------------------------------------------------------------------
def fluid_mean(x):
    helper = LayerHelper("mean")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def fluid_cross_entropy(prob, label, ignore_index=-100):
    helper = LayerHelper("cross_entropy")
    out = helper.create_variable_for_type_inference(dtype=prob.dtype)
    helper.append_op(
        type="cross_entropy",
        inputs={"X": [prob], "Label": [label]},
        outputs={"Y": [out]},
        attrs={"soft_label": False, "ignore_index": ignore_index},
    )
    return out


# --------------------------------------------------------------------------
# Networks: return (feed names, loss var).
# --------------------------------------------------------------------------
def net_fit_a_line():
    x = static.data(name="x", shape=[None, 13], dtype="float32")
    y = static.data(name="y", shape=[None, 1], dtype="float32")
    pred = static.nn.fc(x, size=1)
    cost = paddle.nn.functional.square_error_cost(pred, y)
    return ["x", "y"], fluid_mean(cost)


def net_mlp():
    x = static.data(name="x", shape=[None, 784], dtype="float32")
    label = static.data(name="label", shape=[None, 1], dtype="int64")
    h = static.nn.fc(x, size=128, activation="relu")
    h = static.nn.fc(h, size=64, activation="relu")
    prob = static.nn.fc(h, size=10, activation="softmax")
    return ["x", "label"], fluid_mean(fluid_cross_entropy(prob, label))


OPTIMIZERS = {
    "sgd": lambda lr: (paddle.optimizer.SGD(learning_rate=lr), {}),
    "momentum": lambda lr: (
        paddle.optimizer.Momentum(learning_rate=lr, momentum=0.9),
        {"momentum": 0.9, "use_nesterov": False},
    ),
    "adam": lambda lr: (
        paddle.optimizer.Adam(learning_rate=lr),
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False},
    ),
}

RUNS = {
    # name: (net, data fn, recipe, data seed, batch, optimizer, lr)
    "fit_a_line_sgd": (net_fit_a_line, fit_a_line_data, FIT_A_LINE_RECIPE, FIT_A_LINE_DATA_SEED, 20, "sgd", 0.01),
    "fit_a_line_momentum": (net_fit_a_line, fit_a_line_data, FIT_A_LINE_RECIPE, FIT_A_LINE_DATA_SEED, 20, "momentum", 0.01),
    "mlp_sgd": (net_mlp, mlp_data, MLP_RECIPE, MLP_DATA_SEED, 64, "sgd", 0.1),
    "mlp_adam": (net_mlp, mlp_data, MLP_RECIPE, MLP_DATA_SEED, 64, "adam", 0.001),
}


def run(name, place):
    net, data_fn, recipe, data_seed, batch, opt_name, lr = RUNS[name]
    out_dir = C.fixture_dir("training", name, clean=True)
    data = data_fn()
    for arr in data.values():
        assert arr.shape[:2] == (STEPS, batch)

    main, startup = C.fresh_programs(PARAM_SEED)
    with paddle.utils.unique_name.guard(), static.program_guard(main, startup):
        feed_names, loss = net()
        optimizer, opt_attrs = OPTIMIZERS[opt_name](lr)
        optimizer.minimize(loss, startup)

    params = C.parameter_list(main)
    scope = static.Scope()
    losses = []
    with static.scope_guard(scope):
        exe = static.Executor(place)
        exe.run(startup)
        init = {p["name"]: C.scope_array(scope, p["name"]) for p in params}
        for s in range(STEPS):
            feed = {k: data[k][s] for k in feed_names}
            (l,) = exe.run(main, feed=feed, fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
        final = {p["name"]: C.scope_array(scope, p["name"]) for p in params}

    losses = np.asarray(losses, dtype=np.float64)
    assert np.isfinite(losses).all()
    np.savez(os.path.join(out_dir, "init_params.npz"), **init)
    np.savez(os.path.join(out_dir, "final_params.npz"), **final)
    np.save(os.path.join(out_dir, "losses.npy"), losses)
    C.write_bytes(os.path.join(out_dir, "main.pdmodel"), main.desc.serialize_to_string())
    C.write_bytes(os.path.join(out_dir, "startup.pdmodel"), startup.desc.serialize_to_string())

    meta = {
        "paddle_version": paddle.__version__,
        "name": name,
        "steps": STEPS,
        "batch_size": batch,
        "feed_names": feed_names,
        "loss_name": loss.name,
        "params": params,
        "optimizer": dict({"type": opt_name, "learning_rate": lr}, **opt_attrs),
        "param_seed": PARAM_SEED,
        "param_seed_note": "main.random_seed = startup.random_seed = param_seed; "
        "init_params.npz holds the resulting initial values",
        "data_seed": data_seed,
        "data_recipe": recipe.splitlines(),
        "data_sha256": {
            k: {"sha256": C.sha256_of_array(v), "dtype": str(v.dtype), "shape": list(v.shape)}
            for k, v in data.items()
        },
        "data_sha256_note": "sha256 of arr.tobytes() (C order, little-endian) of the whole [steps, batch, ...] array",
        "main_op_types": C.op_types(main.global_block()),
        "startup_op_types": C.op_types(startup.global_block()),
        "persistable_vars": C.persistable_vars(main),
        "losses_first_last": [losses[0], losses[-1]],
    }
    C.write_json(os.path.join(out_dir, "meta.json"), meta)
    print("%-20s loss %.6f -> %.6f  ops=%s" % (name, losses[0], losses[-1], meta["main_op_types"]))
    return meta


def write_readme(metas):
    lines = [
        "# Training parity fixtures",
        "",
        "Generated by `tools/paddle_fixtures/gen_training.py` with PaddlePaddle %s (CPU)."
        % paddle.__version__,
        "",
        "Each run trains for %d steps; step `s` feeds slice `s` of the synthetic data below." % STEPS,
        "`losses.npy` holds the fetched mean loss of each step (computed *before* that step's",
        "update), as float64. Parameters start from `init_params.npz` (Paddle's seeded",
        "initialisers, `Program.random_seed = %d`); `final_params.npz` holds them after step %d."
        % (PARAM_SEED, STEPS),
        "",
        "| run | net | loss | batch | optimizer |",
        "|---|---|---|---|---|",
    ]
    for m in metas:
        opt = ", ".join("%s=%s" % (k, v) for k, v in m["optimizer"].items() if k != "type")
        net = "fc 13->1" if m["name"].startswith("fit") else "fc 784-128(relu)-64(relu)-10(softmax)"
        loss = "mean(square_error_cost)" if m["name"].startswith("fit") else "mean(cross_entropy)"
        lines.append("| `%s` | %s | %s | %d | %s (%s) |" % (m["name"], net, loss, m["batch_size"], m["optimizer"]["type"], opt))
    lines += [
        "",
        "## Data recipes",
        "",
        "Both use NumPy's legacy `np.random.RandomState`, whose streams are stable across",
        "NumPy versions. `meta.json` stores the sha256 of each generated array's raw bytes",
        "(`arr.tobytes()`, C order) so a consumer can check it regenerated identical data.",
        "",
        "### fit_a_line_* (data seed %d)" % FIT_A_LINE_DATA_SEED,
        "",
        "```python",
        FIT_A_LINE_RECIPE,
        "```",
        "",
    ]
    m = next(m for m in metas if m["name"].startswith("fit"))
    for k, v in m["data_sha256"].items():
        lines.append("- `%s` %s %s: `%s`" % (k, v["dtype"], v["shape"], v["sha256"]))
    lines += ["", "### mlp_* (data seed %d)" % MLP_DATA_SEED, "", "```python", MLP_RECIPE, "```", ""]
    m = next(m for m in metas if m["name"].startswith("mlp"))
    for k, v in m["data_sha256"].items():
        lines.append("- `%s` %s %s: `%s`" % (k, v["dtype"], v["shape"], v["sha256"]))
    lines += [
        "",
        "## Op types of the main programs",
        "",
    ]
    for m in metas:
        lines.append("- `%s`: %s" % (m["name"], ", ".join(m["main_op_types"])))
    lines.append("")
    with open(os.path.join(C.fixture_dir("training"), "README.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    place = paddle.CPUPlace()
    metas = [run(name, place) for name in RUNS]
    write_readme(metas)


if __name__ == "__main__":
    main()
