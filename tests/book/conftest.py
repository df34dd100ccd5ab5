"""What the book chapters' tests share: a dataset cache in a temporary folder, the chapter
scripts loaded as modules, a run on fresh default programs, and the checks every chapter
makes (the cost falls, the inference model is saved)."""
import importlib.util
import os
import random
from pathlib import Path

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import dataset
from fluid_nb.dataset import common, samples

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOOK = EXAMPLES / "book"


def load_chapter(name, folder=BOOK):
    """``<folder>/<name>.py`` as a module (a script, not a package), its main not run."""
    spec = importlib.util.spec_from_file_location(f"_book_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dataset_modules():
    return [getattr(dataset, name) for name in dir(dataset)
            if getattr(getattr(dataset, name), "__name__", "").startswith(dataset.__name__)]


@pytest.fixture
def dataset_cache(tmp_path, monkeypatch):
    """An empty dataset cache (``DATA_HOME``) under ``tmp_path``. Writing sample files
    declares their md5s on the dataset modules; every module's md5s and the cache folder
    are restored afterwards, so no test sees another's files."""
    home = tmp_path / "dataset_cache"
    home.mkdir()
    monkeypatch.setattr(common, "DATA_HOME", str(home))
    for module in _dataset_modules():
        for attr in dir(module):
            if attr.endswith("MD5") and isinstance(getattr(module, attr), str):
                monkeypatch.setattr(module, attr, getattr(module, attr))
    return home


@pytest.fixture
def sample_datasets(dataset_cache):
    """``sample_datasets("mnist", ...)`` writes the small in-format files of those datasets
    into the temporary cache, where a chapter finds them as if downloaded."""
    def write(*names):
        samples.use_samples(*names, home=dataset_cache)
        assert all(samples.is_cached(name) for name in names)
        return dataset_cache
    return write


def run_chapter(module, save_dir, **kwargs):
    """``module.main(save_dir=..., **kwargs)`` on fresh default programs, scope and unique
    names. The readers' shuffle draws from Python's ``random``: seeded, so a run repeats."""
    random.seed(0)
    with fluid.program_guard(fluid.Program(), fluid.Program()), \
            fluid.scope_guard(fluid.Scope()), fluid.unique_name.guard():
        return module.main(save_dir=str(save_dir), **kwargs)


def loss_falls(costs):
    """The mean of the last third of the costs is below the mean of the first third."""
    costs = [float(c) for c in costs]
    assert costs and all(np.isfinite(costs)), costs
    third = max(len(costs) // 3, 1)
    return np.mean(costs[-third:]) < np.mean(costs[:third])


def assert_inference_model_saved(save_dir):
    """``save_inference_model`` wrote the program (``__model__``) and its parameters."""
    files = os.listdir(save_dir)
    assert "__model__" in files and len(files) > 1, files


def reload_inference_model(save_dir):
    """The saved model loaded into a new scope: (program, feed names, fetch targets, scope)."""
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        program, feed_names, fetch_targets = fluid.io.load_inference_model(str(save_dir), exe)
    return program, feed_names, fetch_targets, scope
