"""Fit a line: linear regression on UCI housing (PaddlePaddle book, chapter 1).

The Fluid 1.x program as the book wrote it, with ``import fluid_nb as fluid``:
one fully connected layer (13 features -> 1 price), squared error, SGD. It trains,
reports the train and test mean squared error after every epoch, saves an inference
model, loads it back and predicts a few house prices from the test set.

    python examples/fit_a_line.py --epochs 100 --save-dir fit_a_line.inference.model
"""
import argparse
import os
import random
import sys
import tempfile

import numpy as np

try:
    import fluid_nb as fluid
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import fluid_nb as fluid

BATCH_SIZE = 20
LEARNING_RATE = 0.01


def network():
    """Data layers, the prediction and the average cost (in the current program_guard)."""
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_loss = fluid.layers.mean(cost)
    return x, y, y_predict, avg_loss


def evaluate(exe, program, reader, feeder, fetch_list):
    """Mean of each fetched value over all batches of ``reader``, weighted by batch size."""
    totals, count = np.zeros(len(fetch_list)), 0
    for data in reader():
        values = exe.run(program, feed=feeder.feed(data), fetch_list=fetch_list)
        totals += [float(np.asarray(v).reshape(-1)[0]) * len(data) for v in values]
        count += len(data)
    return totals / count


def epoch_range(epochs, progress):
    """``range(epochs)``, with a progress bar over epochs when ``progress`` and tqdm allow."""
    if progress:
        try:
            from tqdm.auto import trange
            return trange(epochs, desc="training", unit="epoch")
        except ImportError:
            pass
    return range(epochs)


def logger(verbose, epochs_iter):
    """``print`` (through the progress bar, when there is one), or nothing."""
    if not verbose:
        return lambda *args, **kwargs: None
    if hasattr(epochs_iter, "write"):
        return epochs_iter.write
    return print


def main(epochs=100, save_dir=None, seed=90, progress=True, num_predictions=10, verbose=True):
    """Train, evaluate, save and reload; returns a dict of results.

    Keys: ``train_losses`` (one per step), ``train_mse_per_epoch`` / ``test_mse_per_epoch``,
    ``train_mse`` / ``test_mse`` (after the last epoch), ``predictions`` and ``actual`` (the
    reloaded model on the first ``num_predictions`` test samples), ``in_memory_predictions``
    (the same samples through the trained test program) and ``save_dir``.
    """
    random.seed(seed)  # fluid.io.shuffle draws from Python's random module
    np.random.seed(seed)

    main_program = fluid.Program()
    startup_program = fluid.Program()
    main_program.random_seed = seed
    startup_program.random_seed = seed

    with fluid.program_guard(main_program, startup_program), fluid.unique_name.guard():
        x, y, y_predict, avg_loss = network()
        # The test program: everything up to here, before the optimizer adds its ops.
        test_program = main_program.clone(for_test=True)
        sgd_optimizer = fluid.optimizer.SGD(learning_rate=LEARNING_RATE)
        sgd_optimizer.minimize(avg_loss)

    train_reader = fluid.io.batch(
        fluid.io.shuffle(fluid.dataset.uci_housing.train(), buf_size=500),
        batch_size=BATCH_SIZE)
    train_eval_reader = fluid.io.batch(fluid.dataset.uci_housing.train(), batch_size=BATCH_SIZE)
    test_reader = fluid.io.batch(fluid.dataset.uci_housing.test(), batch_size=BATCH_SIZE)

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
    scope = fluid.Scope()

    train_mse_per_epoch, test_mse_per_epoch = [], []
    with fluid.scope_guard(scope):
        exe.run(startup_program)

        history = fluid.LossHistory()
        epoch_iter = epoch_range(epochs, progress)
        log = logger(verbose, epoch_iter)
        for epoch in epoch_iter:
            # One pass over the shuffled training batches (history keeps every step's loss).
            fluid.train_loop(exe, main_program, train_reader, feeder, avg_loss, epochs=1,
                             progress=False, history=history)
            train_mse, = evaluate(exe, test_program, train_eval_reader, feeder, [avg_loss])
            test_mse, = evaluate(exe, test_program, test_reader, feeder, [avg_loss])
            train_mse_per_epoch.append(float(train_mse))
            test_mse_per_epoch.append(float(test_mse))
            log(f"Epoch {epoch:3d}: train MSE {train_mse:9.4f}   test MSE {test_mse:9.4f}")
            if not np.isfinite(train_mse):
                raise RuntimeError("training diverged (non-finite loss)")

        # Save the part of the program that maps x to y_predict, with its parameters.
        save_dir = save_dir or tempfile.mkdtemp(prefix="fit_a_line.inference.model.")
        fluid.io.save_inference_model(save_dir, ["x"], [y_predict], exe,
                                      main_program=main_program)

        test_data = fluid.dataset.uci_housing.load_data()[1][:num_predictions]
        test_x, test_y = test_data[:, :-1], test_data[:, -1:]
        in_memory, = exe.run(test_program, feed={"x": test_x, "y": test_y},
                             fetch_list=[y_predict])

    # Reload in a fresh scope, as an inference service would.
    infer_scope = fluid.Scope()
    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(infer_scope):
        [inference_program, feed_target_names, fetch_targets] = (
            fluid.io.load_inference_model(save_dir, infer_exe))
        predictions, = infer_exe.run(inference_program,
                                     feed={feed_target_names[0]: test_x},
                                     fetch_list=fetch_targets)

    log("Predictions of the reloaded inference model (prices in $1000s):")
    for i, (pred, actual) in enumerate(zip(np.asarray(predictions).reshape(-1),
                                           test_y.reshape(-1))):
        log(f"  {i:2d}: predicted {pred:7.2f}   actual {actual:7.2f}")

    return {
        "train_losses": list(history.losses),
        "train_mse_per_epoch": train_mse_per_epoch,
        "test_mse_per_epoch": test_mse_per_epoch,
        "train_mse": train_mse_per_epoch[-1] if epochs else None,
        "test_mse": test_mse_per_epoch[-1] if epochs else None,
        "predictions": np.asarray(predictions),
        "in_memory_predictions": np.asarray(in_memory),
        "actual": test_y,
        "save_dir": save_dir,
    }


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100, help="passes over the training set")
    parser.add_argument("--save-dir", default="fit_a_line.inference.model",
                        help="where the inference model goes")
    parser.add_argument("--seed", type=int, default=90, help="random seed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _parse_args()
    out = main(epochs=args.epochs, save_dir=args.save_dir, seed=args.seed,
               progress=not args.no_progress)
    print(f"Final test MSE: {out['test_mse']:.4f}  (model saved to {out['save_dir']})")
