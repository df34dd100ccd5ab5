"""Chapter 01, linear regression (examples/book/fit_a_line.py): the UCI housing data ships
with the package, so the chapter runs as the book writes it; the cost falls, and the saved
model reloads and predicts a price per house."""
import numpy as np

import fluid_nb as fluid
from .conftest import (assert_inference_model_saved, load_chapter, loss_falls,
                       reload_inference_model, run_chapter)


def test_01_fit_a_line_trains_saves_and_predicts(tmp_path):
    result = run_chapter(load_chapter("fit_a_line"), tmp_path / "model", num_epochs=20)
    assert loss_falls(result["costs"])
    assert result["test_costs"][-1] < result["test_costs"][0]
    assert_inference_model_saved(result["save_dir"])
    assert result["predictions"].shape == (10, 1)


def test_01_saved_model_reloads_and_predicts_one_price_per_house(tmp_path):
    result = run_chapter(load_chapter("fit_a_line"), tmp_path / "model", num_epochs=1)
    program, feed_names, fetch_targets, scope = reload_inference_model(result["save_dir"])
    assert feed_names == ["x"]
    with fluid.scope_guard(scope):
        (prices,) = fluid.Executor(fluid.CPUPlace()).run(
            program, feed={"x": np.ones((4, 13), "float32")}, fetch_list=fetch_targets)
    assert np.asarray(prices).shape == (4, 1)
