"""Chapter 05, recommendation (examples/book/recommender_system.py) on MovieLens' ml-1m zip
in the temporary cache: user and movie features (embeddings, a category sum, a title
``sequence_conv_pool``) meet in ``cos_sim``; the square error falls and the saved model
rates a movie for a user within the scaled cosine's range."""
from .conftest import assert_inference_model_saved, load_chapter, loss_falls, run_chapter


def test_05_recommender_system_learns_and_rates(sample_datasets, tmp_path):
    sample_datasets("movielens")
    result = run_chapter(load_chapter("recommender_system"), tmp_path / "model",
                         num_epochs=1, batch_size=64)
    assert loss_falls(result["costs"])
    assert result["test_costs"][-1] < sum(result["costs"][:5]) / 5  # below where it began
    assert_inference_model_saved(result["save_dir"])
    assert -5 <= result["rating"] <= 5
