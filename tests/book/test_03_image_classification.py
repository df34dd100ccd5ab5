"""Chapter 03, image classification (examples/book/image_classification.py) on CIFAR-10's
pickled batches in the temporary cache: the book's ResNet-32 learns in a few batches, VGG-16
with batch norm and dropout runs two; each saved model classifies a test image that the
chapter reads back from a PNG."""
import numpy as np
import pytest

from .conftest import assert_inference_model_saved, load_chapter, loss_falls, run_chapter


@pytest.fixture
def cifar(sample_datasets):
    return sample_datasets("cifar")


@pytest.mark.parametrize("net, batches", [("resnet", 6), ("vgg", 2)])
def test_03_image_classification_trains_saves_and_classifies(net, batches, cifar, tmp_path):
    result = run_chapter(load_chapter("image_classification"), tmp_path / "model", net=net,
                         max_batches=batches, batch_size=16)
    if net == "resnet":
        assert loss_falls(result["costs"]), result["costs"]
    assert all(np.isfinite(result["costs"]))
    assert_inference_model_saved(result["save_dir"])
    assert result["probabilities"].shape == (1, 10)
    np.testing.assert_allclose(result["probabilities"].sum(), 1, rtol=1e-5)
