"""The Fluid 1.x book's chapters 01-06 as examples/book/ writes them (the book's programs,
only the import lines changed) run to the end on small data in the datasets' real
formats: the cost falls, the inference model is saved, loads back and infers."""
import importlib.util
import os
import random

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.dataset import common, samples

BOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "book")


def _chapter(name):
    spec = importlib.util.spec_from_file_location(f"book_{name}", os.path.join(BOOK,
                                                                                f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def sample_data(tmp_path, monkeypatch):
    """The sample files in a temporary cache; the cache folder and the modules' md5s are
    restored afterwards."""
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path / "data"))
    for files in samples._FILES.values():
        for module, _, _, md5_attr in files:
            monkeypatch.setattr(module, md5_attr, getattr(module, md5_attr))
    return tmp_path


def _run(name, tmp_path, **kwargs):
    """The chapter's main() on fresh default programs, scope and names (the readers'
    shuffle draws from Python's random module: seeded, so a run is repeatable)."""
    random.seed(0)
    with fluid.program_guard(fluid.Program(), fluid.Program()), \
            fluid.scope_guard(fluid.Scope()), fluid.unique_name.guard():
        return _chapter(name).main(save_dir=str(tmp_path / "model"), **kwargs)


def _falls(costs):
    third = max(len(costs) // 3, 1)
    return np.mean(costs[-third:]) < np.mean(costs[:third])


def _saved(result):
    files = os.listdir(result["save_dir"])
    assert "__model__" in files and len(files) > 1, files


def test_01_fit_a_line(tmp_path):
    result = _run("fit_a_line", tmp_path, num_epochs=20)
    assert _falls(result["costs"]) and result["test_costs"][-1] < result["test_costs"][0]
    _saved(result)
    assert result["predictions"].shape == (10, 1)


@pytest.mark.parametrize("nn_type", ["softmax_regression", "mlp", "conv"])
def test_02_recognize_digits(nn_type, sample_data):
    result = _run("recognize_digits", sample_data, nn_type=nn_type, num_epochs=2, sample=True)
    assert _falls(result["costs"]) and result["tests"][-1][1] > 0.5
    _saved(result)
    assert result["probabilities"].shape == (1, 10)
    assert np.argmax(result["probabilities"][0]) == result["digit"]


@pytest.mark.parametrize("net", ["resnet", "vgg"])
def test_03_image_classification(net, sample_data):
    batches = 8 if net == "resnet" else 2
    result = _run("image_classification", sample_data, net=net, max_batches=batches,
                  batch_size=16, sample=True)
    if net == "resnet":
        assert _falls(result["costs"])
    assert all(np.isfinite(result["costs"]))
    _saved(result)
    assert result["probabilities"].shape == (1, 10)
    np.testing.assert_allclose(result["probabilities"].sum(), 1, rtol=1e-5)


def test_04_word2vec(sample_data):
    result = _run("word2vec", sample_data, num_epochs=2, sample=True)
    assert _falls(result["costs"]) and result["test_costs"][-1] < result["test_costs"][0]
    _saved(result)
    assert result["probabilities"].shape == (1, result["dict_size"])


def test_05_recommender_system(sample_data):
    result = _run("recommender_system", sample_data, num_epochs=2, sample=True)
    assert _falls(result["costs"])
    _saved(result)
    assert -5 <= result["rating"] <= 5


@pytest.mark.parametrize("net", ["conv", "stacked_lstm", "dyn_rnn"])
def test_06_understand_sentiment(net, sample_data):
    epochs = 6 if net == "dyn_rnn" else 4  # the book's learning rate, 10 batches an epoch
    result = _run("understand_sentiment", sample_data, net=net, num_epochs=epochs, sample=True)
    assert _falls(result["costs"]) and result["tests"][-1][1] > 0.8
    _saved(result)
    probabilities = result["probabilities"]
    assert probabilities.shape == (3, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
    great, bad = probabilities[1], probabilities[2]  # "a great movie", "very bad"
    assert great[0] > bad[0]
