"""Chapter 02, recognizing digits (examples/book/recognize_digits.py) on MNIST's gzipped
IDX files in the temporary cache: each of the book's three networks learns, and the saved
model classifies a test image that the chapter reads back from a PNG."""
import numpy as np
import pytest

import fluid_nb as fluid
from .conftest import (assert_inference_model_saved, load_chapter, loss_falls,
                       reload_inference_model, run_chapter)


@pytest.fixture
def mnist(sample_datasets):
    return sample_datasets("mnist")


@pytest.mark.parametrize("nn_type", ["softmax_regression", "mlp", "conv"])
def test_02_recognize_digits_learns_and_classifies_the_image(nn_type, mnist, tmp_path):
    result = run_chapter(load_chapter("recognize_digits"), tmp_path / "model",
                         nn_type=nn_type, num_epochs=2)
    assert loss_falls(result["costs"]) and result["tests"][-1][1] > 0.5, result["tests"]
    assert_inference_model_saved(result["save_dir"])
    assert result["probabilities"].shape == (1, 10)
    assert np.argmax(result["probabilities"][0]) == result["digit"]


def test_02_saved_model_reloads_and_classifies_a_batch(mnist, tmp_path):
    result = run_chapter(load_chapter("recognize_digits"), tmp_path / "model",
                         nn_type="conv", num_epochs=1, max_batches=1)
    program, feed_names, fetch_targets, scope = reload_inference_model(result["save_dir"])
    assert feed_names == ["img"]
    with fluid.scope_guard(scope):
        (out,) = fluid.Executor(fluid.CPUPlace()).run(
            program, feed={"img": np.zeros((3, 1, 28, 28), "float32")},
            fetch_list=fetch_targets)
    np.testing.assert_allclose(np.asarray(out).sum(axis=1), 1, rtol=1e-5)
    assert np.asarray(out).shape == (3, 10)
