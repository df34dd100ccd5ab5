"""The book test's sequence-to-sequence form (examples/book/rnn_encoder_decoder.py) on
WMT-14's tarball in the temporary cache: at the book's sizes it trains its five batches,
saves, reloads and infers a softmax row per target word; with a higher learning rate the
cost falls."""
import numpy as np

from .conftest import assert_inference_model_saved, load_chapter, loss_falls, run_chapter


def test_rnn_encoder_decoder_runs_as_the_book_test(sample_datasets, tmp_path):
    sample_datasets("wmt14")
    result = run_chapter(load_chapter("rnn_encoder_decoder"), tmp_path / "model",
                         dict_size=30000, batches=5)
    assert len(result["costs"]) == 5 and np.all(np.isfinite(result["costs"]))
    assert_inference_model_saved(result["save_dir"])
    inference = result["inference"]
    assert inference.recursive_sequence_lengths() == [[4, 6]]
    rows = np.array(inference)
    assert rows.shape == (10, 30000)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-4)


def test_rnn_encoder_decoder_learns_the_sample(sample_datasets, tmp_path):
    sample_datasets("wmt14")
    result = run_chapter(load_chapter("rnn_encoder_decoder"), tmp_path / "model",
                         dict_size=40, batches=300, learning_rate=0.05)
    assert loss_falls(result["costs"])
    # from about log(20) (a uniform guess over the sample's words) to well below
    assert np.mean(result["costs"][-10:]) < 0.6 * np.mean(result["costs"][:10])
