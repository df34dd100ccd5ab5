"""Chapter 04, word embeddings (examples/book/word2vec.py) on PTB's tarball in the
temporary cache: the N-gram model's cost falls, and the saved model, fed four words as LoD
tensors, gives a distribution over the dictionary for the fifth."""
import numpy as np

import fluid_nb as fluid
from .conftest import (assert_inference_model_saved, load_chapter, loss_falls,
                       reload_inference_model, run_chapter)


def test_04_word2vec_learns_the_next_word(sample_datasets, tmp_path):
    sample_datasets("imikolov")
    result = run_chapter(load_chapter("word2vec"), tmp_path / "model", num_epochs=2)
    assert loss_falls(result["costs"])
    assert result["test_costs"][-1] < result["test_costs"][0]
    assert_inference_model_saved(result["save_dir"])
    assert result["probabilities"].shape == (1, result["dict_size"])
    np.testing.assert_allclose(result["probabilities"].sum(), 1, rtol=1e-5)

    program, feed_names, fetch_targets, scope = reload_inference_model(result["save_dir"])
    assert feed_names == ["firstw", "secondw", "thirdw", "fourthw"]
    place = fluid.CPUPlace()
    feed = {name: fluid.create_lod_tensor([[1], [2]], [[1, 1]], place) for name in feed_names}
    with fluid.scope_guard(scope):
        (out,) = fluid.Executor(place).run(program, feed=feed, fetch_list=fetch_targets)
    assert np.asarray(out).shape == (2, result["dict_size"])
