"""Chapter 08, machine translation, in its Fluid 1.8 form on the RNN API
(examples/book/machine_translation_rnn_api.py: GRUCell encoders under layers.rnn, an
attention RNNCell, BeamSearchDecoder with dynamic_decode) on WMT16's sample in the
temporary cache: the cost falls, the saved parameters load into the inference program,
and its beams ([batch, time, beam] ids) translate the test sentences word by word better
than chance."""
import numpy as np

from .conftest import load_chapter, loss_falls, run_chapter


def test_08_machine_translation_on_the_rnn_api_trains_and_beam_search_decodes(
        sample_datasets, tmp_path):
    sample_datasets("wmt16")
    chapter = load_chapter("machine_translation_rnn_api")
    config = chapter.Config(word_dim=32, hidden_dim=32, max_length=10, beam_size=3,
                            batch_size=16, warmup_steps=20)
    result = run_chapter(chapter, tmp_path / "params", num_epochs=4, config=config)
    assert loss_falls(result["costs"])
    assert result["costs"][-1] < result["costs"][0] * 0.6

    (ids,) = result["ids"]
    batch, time, beams = ids.shape
    assert beams == config.beam_size and 1 <= time <= config.max_length + 1
    assert ids.min() >= 0 and ids.max() < config.dict_size
    # a beam that has ended keeps emitting the end id
    for row in ids.transpose(0, 2, 1).reshape(-1, time):
        ended = np.flatnonzero(row == chapter.EOS_ID)
        if ended.size:
            assert (row[ended[0]:] == chapter.EOS_ID).all(), row

    # the sample's translation is word by word: the best beam matches the reference's
    # words at most positions (an untrained model matches about one in six)
    references = [sample[2] for sample in
                  list(chapter.paddle.dataset.wmt16.test(config.dict_size,
                                                         config.dict_size)())[:batch]]
    hits = sum(int(a == b) for i, ref in enumerate(references) for a, b in zip(ref, ids[i, :, 0]))
    assert hits / sum(len(ref) for ref in references) > 0.4
    assert len(result["translations"]) == batch
