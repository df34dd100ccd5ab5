"""Generate tiny inference models in both of Paddle's on-disk formats.

Output: tests/fixtures/paddle/inference/<model>/
    combined/model.pdmodel     ProgramDesc bytes (paddle.static.save_inference_model)
    combined/model.pdiparams   all persistables, save_combine stream, sorted by name
    separate/__model__         ProgramDesc bytes of the same pruned inference program
    separate/<var name>        one LoDTensor stream file per persistable ('save' op,
                               written by paddle.static.save_vars(filename=None))
    input.npy                  float32 batch, N=3
    expected.npy               Paddle's output for input.npy, from the reloaded model
    meta.json                  feed/fetch names, parameter names/shapes/dtypes, op types

Run from the repo root:
    paddle-venv/bin/python tools/paddle_fixtures/gen_inference.py
"""

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
static = paddle.static
from paddle.framework.io_utils import is_persistable  # noqa: E402  (same predicate save_inference_model uses)

SEED = 1234
BATCH = 3


# --------------------------------------------------------------------------
# Network definitions.  Each builder is called inside program_guard and a
# fresh unique_name guard, so variable names are deterministic (fc_0.w_0 ...).
# Each returns (feed_vars, fetch_vars).
# --------------------------------------------------------------------------
def build_mlp():
    x = static.data(name="x", shape=[None, 8], dtype="float32")
    h = static.nn.fc(x, size=16, activation="relu")
    h = static.nn.fc(h, size=16, activation="relu")
    y = static.nn.fc(h, size=4, activation="softmax")
    return [x], [y]


def build_linreg():
    x = static.data(name="x", shape=[None, 13], dtype="float32")
    y = static.nn.fc(x, size=1)
    return [x], [y]


def build_cnn():
    img = static.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
    c = static.nn.conv2d(img, num_filters=4, filter_size=3, padding=1)
    # Built as a training-mode batch_norm; save_inference_model's
    # _inference_optimize flips is_test to True in the saved program.
    b = static.nn.batch_norm(c)
    r = paddle.nn.functional.relu(b)
    p = paddle.nn.functional.max_pool2d(r, kernel_size=2, stride=2)
    y = static.nn.fc(p, size=10, activation="softmax")
    return [img], [y]


MODELS = {
    # name: (builder, input shape without batch)
    "mlp": (build_mlp, (8,)),
    "linreg": (build_linreg, (13,)),
    "cnn": (build_cnn, (1, 8, 8)),
}


def build(builder, seed):
    main, startup = C.fresh_programs(seed)
    with paddle.utils.unique_name.guard():
        with static.program_guard(main, startup):
            feeds, fetches = builder()
    return main, startup, feeds, fetches


def randomize_non_weights(program, scope, place, rs):
    """Make biases and batch-norm statistics non-trivial.

    Paddle initialises biases to 0 and BN mean/var/scale/bias to 0/1/1/0,
    which would hide bugs in a consumer.  Weights keep Paddle's own
    (seeded) initialisation.
    """
    for v in C.persistable_vars(program):
        name = v["name"]
        shape = v["shape"]
        if name.startswith("batch_norm"):
            # batch_norm_N.w_0 scale, .b_0 bias, .w_1 moving mean, .w_2 moving variance
            suffix = name.rsplit(".", 1)[1]
            lo, hi = {"w_0": (0.5, 1.5), "b_0": (-0.5, 0.5), "w_1": (-0.5, 0.5), "w_2": (0.5, 2.0)}[suffix]
            val = rs.uniform(lo, hi, shape)
        elif name.endswith(".b_0"):  # fc / conv bias
            val = rs.uniform(-0.5, 0.5, shape)
        else:
            continue
        C.set_scope_array(scope, name, val.astype(v["dtype"]), place)


def save_separate(dirname, main, feeds, fetches, exe):
    """Old-style layout: __model__ + one file per persistable.

    Mirrors what save_inference_model does, except that the program bytes go
    to ``__model__`` and the persistables are written one per file by
    paddle.static.save_vars(filename=None), i.e. with Paddle's 'save' op.
    """
    os.makedirs(dirname, exist_ok=True)
    with paddle.utils.unique_name.guard():
        program = static.normalize_program(main, feeds, fetches)
    program_bytes = program._remove_training_info(clip_extra=True).desc.serialize_to_string()
    C.write_bytes(os.path.join(dirname, "__model__"), program_bytes)
    static.save_vars(
        exe,
        dirname=dirname,
        main_program=program,
        predicate=is_persistable,
        filename=None,
    )


def run_loaded(load_fn, place, feed_array):
    scope = static.Scope()
    exe = static.Executor(place)
    with static.scope_guard(scope):
        program, feed_names, fetch_vars = load_fn(exe)
        (out,) = exe.run(
            program, feed={feed_names[0]: feed_array}, fetch_list=fetch_vars
        )
    return program, feed_names, [v.name for v in fetch_vars], np.array(out)


def generate(name, builder, in_shape, place):
    out_dir = C.fixture_dir("inference", name, clean=True)
    rs = np.random.RandomState(SEED)
    scope = static.Scope()
    exe = static.Executor(place)
    with static.scope_guard(scope):
        # 1) combined format via the official API.
        main, startup, feeds, fetches = build(builder, SEED)
        exe.run(startup)
        randomize_non_weights(main, scope, place, rs)
        x = rs.uniform(-1.0, 1.0, (BATCH,) + in_shape).astype("float32")
        # for_test clone: batch_norm uses (and does not update) moving stats.
        (direct,) = exe.run(
            main.clone(for_test=True), feed={feeds[0].name: x}, fetch_list=fetches
        )
        with paddle.utils.unique_name.guard():  # -> save_infer_model/scale_0.tmp_0
            static.save_inference_model(
                os.path.join(out_dir, "combined", "model"),
                feeds,
                fetches,
                exe,
                program=main,
            )
        # 2) separate format from an identically built program that shares
        #    the same scope (so identical parameter values).
        main2, _, feeds2, fetches2 = build(builder, SEED)
        save_separate(os.path.join(out_dir, "separate"), main2, feeds2, fetches2, exe)

    # Reload both formats in fresh scopes and run them.
    comb_prog, feed_names, fetch_names, out_comb = run_loaded(
        lambda e: static.load_inference_model(
            os.path.join(out_dir, "combined", "model"), e
        ),
        place,
        x,
    )
    sep_prog, feed_names2, fetch_names2, out_sep = run_loaded(
        lambda e: static.load_inference_model(
            os.path.join(out_dir, "separate"),
            e,
            model_filename=None,
            params_filename=None,
        ),
        place,
        x,
    )
    assert feed_names == feed_names2 and fetch_names == fetch_names2
    np.testing.assert_array_equal(out_comb, out_sep)
    np.testing.assert_allclose(out_comb, np.array(direct), rtol=1e-6, atol=1e-7)

    np.save(os.path.join(out_dir, "input.npy"), x)
    np.save(os.path.join(out_dir, "expected.npy"), out_comb)

    params = [v for v in C.persistable_vars(comb_prog) if v["type"] == "LOD_TENSOR"]
    meta = {
        "paddle_version": paddle.__version__,
        "model": name,
        "feed_names": list(feed_names),
        "fetch_names": list(fetch_names),
        "input_shape": list(x.shape),
        "input_dtype": "float32",
        "expected_shape": list(out_comb.shape),
        "expected_dtype": str(out_comb.dtype),
        "params": [
            {"name": p["name"], "shape": p["shape"], "dtype": p["dtype"]}
            for p in params
        ],
        "combined_params_order": sorted(p["name"] for p in params),
        "op_types": C.op_types(comb_prog.global_block()),
        "seed": SEED,
        "notes": (
            "combined/ written by paddle.static.save_inference_model; "
            "separate/__model__ is the same normalized inference ProgramDesc, "
            "separate/<name> written by paddle.static.save_vars(filename=None). "
            "Biases and batch-norm statistics were overwritten with "
            "RandomState(seed).uniform values after the startup program ran."
        ),
    }
    C.write_json(os.path.join(out_dir, "meta.json"), meta)
    print("%-7s ops=%s -> %d bytes" % (name, meta["op_types"], C.dir_size(out_dir)))


def main():
    place = paddle.CPUPlace()
    for name, (builder, in_shape) in MODELS.items():
        generate(name, builder, in_shape, place)


if __name__ == "__main__":
    main()
