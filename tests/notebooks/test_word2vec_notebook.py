"""Notebook 05 (word embeddings, the book's chapter 04) runs top to bottom in a real kernel on
the PTB sample and prints what it teaches: four lookups into one shared table, a live step
that lowers the loss, training that lowers it further, next-word predictions well above
chance, and an inference model that reloads and gives one distribution over the
dictionary. It is stored executed, with its views' state, under 1 MB."""
import re

import pytest

from .test_notebooks import NOTEBOOKS, PROGRAM_MIME, WIDGET_MIME, WIDGET_STATE, Executed

nbformat = pytest.importorskip("nbformat")

NAME = "05_word2vec.ipynb"
MAX_SECONDS = 60


@pytest.fixture(scope="module")
def word2vec():
    return Executed(NAME)


def _number(executed, cell_id, pattern):
    found = re.search(pattern, executed.text(cell_id))
    assert found, f"cell {cell_id!r}: no match for {pattern!r} in\n{executed.text(cell_id)}"
    return [float(g) for g in found.groups()]


def test_word2vec_notebook_is_stored_executed_with_its_views_under_one_megabyte():
    path = NOTEBOOKS / NAME
    assert path.stat().st_size < 1_000_000
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    kinds = {m["state"].get("_kind") for m in
             nb.metadata["widgets"][WIDGET_STATE]["state"].values()}
    assert {"tensor", "program"} <= kinds


@pytest.mark.slow
def test_word2vec_notebook_runs_clean(word2vec):
    outputs = [o for cell in word2vec.nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [f"{o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert word2vec.seconds() < MAX_SECONDS


@pytest.mark.slow
def test_word2vec_model_looks_four_words_up_in_one_shared_table(word2vec):
    dict_size = word2vec.value_after("data", "dictionary size:")
    assert dict_size > 211  # the book infers with word ids up to 211
    assert "lookup_table(Ids=firstw[-1, 1]; W=shared_w" in word2vec.text("model")
    assert word2vec.value_after("shapes", "lookup_table ops:") == 4
    parameters = word2vec.value_after("shapes", "parameters:")
    assert parameters.count("shared_w") == 1 and len(parameters) == 5
    assert "-> concatenated: (8, 128)" in word2vec.text("shapes")
    assert "softmax rows sum to one: True" in word2vec.text("shapes")
    assert "TensorView(8x32 float32" in word2vec.text("vectors")


@pytest.mark.slow
def test_word2vec_live_step_then_training_lower_the_loss(word2vec):
    before, after = _number(word2vec, "step", r"loss mean_0\.tmp_0: ([\d.]+) -> ([\d.]+)")
    assert after < before
    assert "shared_w: |update|" in word2vec.text("step")  # the sparse table is updated too
    first, last = _number(word2vec, "train", r"first batches ([\d.]+), last batches ([\d.]+)")
    assert last < first
    assert word2vec.data("graph", PROGRAM_MIME) and word2vec.data("graph", WIDGET_MIME)


@pytest.mark.slow
def test_word2vec_predicts_the_next_word_well_above_chance(word2vec):
    dict_size = word2vec.value_after("data", "dictionary size:")
    accuracy = word2vec.value_after("evaluate", "next-word accuracy on the test 5-grams:")
    assert accuracy > 20 / dict_size
    assert word2vec.value_after("table", "table shape:") == (dict_size, 32)
    assert len(re.findall(r"\| actual: ", word2vec.text("ranking"))) == 3


@pytest.mark.slow
def test_word2vec_inference_model_reloads_and_gives_one_distribution(word2vec):
    dict_size = word2vec.value_after("data", "dictionary size:")
    assert word2vec.value_after("infer", "inference output shape:") == (1, dict_size)
