"""Chapter 06, sentiment analysis (examples/book/understand_sentiment.py): each of the
book's networks over IMDB reviews as LoD word sequences (aclImdb's tarball in the
temporary cache) learns which words are positive; the saved model classifies three
reviews given as one LoD tensor."""
import numpy as np
import pytest

from .conftest import (assert_inference_model_saved, load_chapter, loss_falls,
                       reload_inference_model, run_chapter)

import fluid_nb as fluid

#: net -> (passes, layer widths): the book's widths where NumPy trains them in seconds
RUNS = {"conv": (4, {}),
        "stacked_lstm": (4, {}),
        "dyn_rnn": (6, {}),
        "dynamic_rnn": (6, {})}


@pytest.fixture
def imdb(sample_datasets):
    return sample_datasets("imdb")


@pytest.mark.parametrize("net", sorted(RUNS))
def test_06_understand_sentiment_learns_and_classifies_reviews(net, imdb, tmp_path):
    chapter = load_chapter("understand_sentiment")
    passes, sizes = RUNS[net]
    result = run_chapter(chapter, tmp_path / "model", net=net, num_epochs=passes,
                         batch_size=32, **sizes)
    assert loss_falls(result["costs"]) and result["tests"][-1][1] > 0.8, result["tests"]
    assert_inference_model_saved(result["save_dir"])
    probabilities = result["probabilities"]
    assert probabilities.shape == (3, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
    great, bad = probabilities[1], probabilities[2]  # "a great movie", "very bad"
    assert great[0] > bad[0]


def test_06_saved_model_reloads_with_the_words_feed(imdb, tmp_path):
    chapter = load_chapter("understand_sentiment")
    result = run_chapter(chapter, tmp_path / "model", net="conv", num_epochs=1,
                         max_batches=2, batch_size=32)
    program, feed_names, fetch_targets, scope = reload_inference_model(result["save_dir"])
    assert feed_names == ["words"] and len(fetch_targets) == 1
    words = fluid.create_lod_tensor([[1, 2, 3], [4, 5]], [[3, 2]], fluid.CPUPlace())
    with fluid.scope_guard(scope):
        (out,) = fluid.Executor(fluid.CPUPlace()).run(program, feed={"words": words},
                                                      fetch_list=fetch_targets)
    assert np.asarray(out).shape == (2, 2)
