"""Acceptance through the public API: the example scripts (examples/distributed/), transpiled
by fluid.DistributeTranspiler and started by `fluid-nb launch` as real processes on free
localhost ports. Sync mode with 2 servers and 2 trainers, each trainer on half of every
batch, ends with the parameters of single-process training on the whole batches after 20
steps (and a table kept on the servers, read by prefetch and updated by sparse gradients,
trains as one process does); async mode trains and ends."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ..trajectories import assert_float32_losses_agree, assert_float32_runs_agree
from .processes import REPO

EXAMPLES = REPO / "examples" / "distributed"
# the longest sum of a step (fit_a_line's batch of 20 rows; the MLP's 256 hidden units) and
# the most one update moves one element (Adam's learning rate in the example scripts)
REDUCTION = {"fit_a_line.py": 20, "mlp.py": 256}
ADAM_STEP = {"fit_a_line.py": 0.1, "mlp.py": 0.005}
ENV = {"FLAGS_rpc_deadline": "60000", "FLAGS_rpc_round_deadline": "30000"}


def _environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "TRAINING_"))}
    env.update(ENV, PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    return env


def _launch(script, args, save):
    done = subprocess.run([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "2",
                           "--trainers", "2", str(EXAMPLES / script), *args, "--save",
                           str(save)], env=_environment(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _single_process(script, args, save, init):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args, "--save", str(save),
                           "--init", str(init)], env=_environment(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("script,optimizer,decay", [
    ("fit_a_line.py", "sgd", False), ("fit_a_line.py", "adam", False),
    ("mlp.py", "sgd", False), ("mlp.py", "adam", False),
    ("fit_a_line.py", "sgd", True),  # the servers run the learning-rate schedule
])
def test_sync_training_on_half_batches_equals_single_process_training(tmp_path, script,
                                                                       optimizer, decay):
    args = ["--optimizer", optimizer, "--steps", "20"] + (["--lr-decay"] if decay else [])
    out = _launch(script, args, tmp_path)
    assert "[pserver.0] all trainers done" in out and "[pserver.1] all trainers done" in out
    trainers = [np.load(tmp_path / f"trainer.{t}.npz") for t in range(2)]
    # both trainers start from the servers' initial parameters; the reference does too
    _single_process(script, args, tmp_path, tmp_path / "trainer.0.npz")
    local = np.load(tmp_path / "local.npz")
    names = [k[len("final/"):] for k in local.files if k.startswith("final/")]
    assert len(names) == (2 if script == "fit_a_line.py" else 6)
    for name in names:
        np.testing.assert_array_equal(trainers[0]["initial/" + name],
                                      trainers[1]["initial/" + name])
        moved = np.abs(local["final/" + name] - local["initial/" + name]).max()
        assert moved > 1e-3, name  # training changed it: the comparison means something
        for t in trainers:
            # float32 rounding: the servers average two half-batch means where the single
            # process takes one mean, and training carries the difference on
            assert_float32_runs_agree(
                t["final/" + name], local["final/" + name], 20, REDUCTION[script],
                ADAM_STEP[script] if optimizer == "adam" else None, name=name)
    # each trainer's loss is its half's; together they are the whole batch's
    assert_float32_losses_agree((trainers[0]["losses"] + trainers[1]["losses"]) / 2,
                                local["losses"], REDUCTION[script])


@pytest.mark.parametrize("script,args", [("mlp.py", ["--optimizer", "adam"]),
                                         ("fit_a_line.py", ["--optimizer", "sgd"]),
                                         ("mlp.py", ["--lr-decay"])])
def test_async_training_lowers_the_loss_and_ends(tmp_path, script, args):
    """Each trainer measures the test set's loss before and after its training. A trainer
    that starts while the other already updates the servers begins from trained values, so
    the untrained model's loss is the higher "before" of the two (the first trainer to
    start sees the initial parameters: no update comes before a trainer's first step)."""
    out = _launch(script, ["--async", "--steps", "40", *args], tmp_path)
    assert out.count("all trainers done") == 2
    held_out = []
    for t in range(2):
        saved = np.load(tmp_path / f"trainer.{t}.npz")
        assert len(saved["losses"]) == 40
        held_out.append(saved["held_out"])  # the test set's loss before and after training
    untrained = max(before for before, _ in held_out)
    for before, after in held_out:
        assert after < before and after < 0.5 * untrained, (before, after, untrained)


def _losses(text, label):
    line = next(line for line in text.splitlines() if line.startswith(f"{label}losses "))
    return np.asarray(json.loads(line.split("losses ", 1)[1]))


def test_a_table_kept_on_the_servers_trains_as_one_process_does(tmp_path):
    """SelectedRows gradients cut across two servers, rows read back by prefetch: the
    trainers' losses (each on half of every batch) average to single-process training's."""
    script = str(REPO / "tests" / "distributed" / "sparse_job.py")
    job = subprocess.run([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "2",
                          "--trainers", "2", script], env=_environment(), capture_output=True,
                         text=True, timeout=120)
    assert job.returncode == 0, job.stdout + job.stderr
    alone = subprocess.run([sys.executable, script], env=_environment(), capture_output=True,
                           text=True, timeout=60)
    assert alone.returncode == 0, alone.stderr
    halves = (_losses(job.stdout, "[trainer.0] ") + _losses(job.stdout, "[trainer.1] ")) / 2
    whole = _losses(alone.stdout, "")
    assert len(whole) == 12 and whole[-1] != whole[0]
    assert_float32_losses_agree(halves, whole, reduction=16)  # the embedding's width
