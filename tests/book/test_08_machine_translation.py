"""Chapter 08, machine translation (examples/book/machine_translation.py) in its DynamicRNN
and beam search form, on WMT16's tarball in the temporary cache: the cost falls, the
parameters saved by training load into the inference program, and the While loop's beam
search gives, per source sentence, at most beam_size hypotheses that start with <s>, best
first."""
import numpy as np

from .conftest import load_chapter, loss_falls, run_chapter


def test_08_machine_translation_trains_and_beam_search_decodes(sample_datasets, tmp_path):
    sample_datasets("wmt16")
    chapter = load_chapter("machine_translation")
    config = chapter.Config(word_dim=32, hidden_dim=32, max_length=8, beam_size=3,
                            batch_size=16, warmup_steps=20)
    result = run_chapter(chapter, tmp_path / "params", num_epochs=4, config=config)
    assert loss_falls(result["costs"])
    assert result["costs"][-1] < result["costs"][0] * 0.6

    source_level, sentence_level = result["lod"]
    assert len(source_level) == len(result["sources"]) + 1
    for i, hypotheses in enumerate(result["translations"]):
        assert 1 <= len(hypotheses) <= config.beam_size
        scores = [score for score, _ in hypotheses]
        assert scores == sorted(scores, reverse=True)  # best first
        for j in range(source_level[i], source_level[i + 1]):
            length = sentence_level[j + 1] - sentence_level[j]
            assert 2 <= length <= config.max_length + 1  # <s>, words, and at most the limit
