"""The book notebooks 06 (semantic role labelling, chapter 07) and 07 (sentiment, chapter 06)
run top to bottom in a real kernel and print what they teach: the CRF cost by hand equals
``linear_chain_crf``'s, the cost falls step by step and pass by pass, the decoded tags have
the sentences' lengths and equal a Viterbi by hand, the DynamicRNN batch shrinks as the
reviews end, and the reloaded inference model gives probabilities that sum to 1.

Both are stored executed (with outputs and widget state) and stay under 1 MB. Without the
real datasets in the dataset cache they train on small corpora they write themselves; the
checks of what training reaches apply to those corpora only.
"""
import ast
import re
from datetime import datetime
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SRL = "06_label_semantic_roles.ipynb"
SENTIMENT = "07_understand_sentiment.ipynb"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PROGRAM_MIME = "application/vnd.fluid-nb.program+json"
MAX_SECONDS = 60
MAX_BYTES = 1_000_000


class Executed:
    """A notebook run in a fresh kernel: its cells' outputs by cell id."""

    def __init__(self, name):
        self.nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = nbclient.NotebookClient(self.nb, kernel_name="python3", timeout=120,
                                         record_timing=True,
                                         resources={"metadata": {"path": str(ROOT)}})
        client.execute()
        self.cells = {cell.id: cell for cell in self.nb.cells}

    def text(self, cell_id):
        """What the cell printed, and its results' plain text."""
        return "".join(o.get("text", "") if o.output_type == "stream"
                       else o.get("data", {}).get("text/plain", "") + "\n"
                       for o in self.cells[cell_id].outputs)

    def value_after(self, cell_id, label):
        """The Python literal printed after ``label`` at the start of a line (the rest of
        the line may go on after it)."""
        for line in self.text(cell_id).splitlines():
            if line.startswith(label):
                return ast.literal_eval(_first_literal(line[len(label):].strip()))
        raise AssertionError(f"cell {cell_id!r} printed no line starting with {label!r}:\n"
                             f"{self.text(cell_id)}")

    def floats(self, cell_id, pattern):
        """The groups of ``pattern`` (searched in the cell's text) as floats."""
        found = re.search(pattern, self.text(cell_id))
        assert found, f"cell {cell_id!r}: no match for {pattern!r} in\n{self.text(cell_id)}"
        return [float(g) for g in found.groups()]

    def data(self, cell_id, mime):
        found = [o.data[mime] for o in self.cells[cell_id].outputs
                 if o.output_type in ("execute_result", "display_data") and mime in o.data]
        assert found, f"cell {cell_id!r} has no {mime} output"
        return found[0]

    def seconds(self):
        """From the first cell starting to the last one finishing (kernel start excluded)."""
        times = [cell.metadata["execution"] for cell in self.nb.cells
                 if cell.cell_type == "code"]
        start = datetime.fromisoformat(times[0]["iopub.execute_input"].rstrip("Z"))
        end = datetime.fromisoformat(times[-1]["shell.execute_reply"].rstrip("Z"))
        return (end - start).total_seconds()

    def widget_states(self):
        state = self.nb.metadata["widgets"][WIDGET_STATE]["state"]
        return [m["state"] for m in state.values() if m["model_name"] == "AnyModel"]

    def saved_size(self, tmp_path):
        path = tmp_path / "saved.ipynb"
        nbformat.write(self.nb, path)
        return path.stat().st_size


def _first_literal(text):
    """The bracketed literal ``text`` starts with (to its matching bracket), else its first
    word."""
    if not text or text[0] not in "([{":
        return text.split()[0]
    depth, quote = 0, None
    for end, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[:end + 1]
    return text


def assert_clean_run(executed):
    outputs = [o for cell in executed.nb.cells if cell.cell_type == "code"
               for o in cell.outputs]
    assert not [f"{o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert executed.seconds() < MAX_SECONDS


def offsets_of(lengths):
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return offsets


@pytest.fixture(scope="module")
def srl():
    return Executed(SRL)


@pytest.fixture(scope="module")
def sentiment():
    return Executed(SENTIMENT)


# --- stored form -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [SRL, SENTIMENT])
def test_stored_notebook_is_executed_without_errors_and_under_one_megabyte(name):
    path = NOTEBOOKS / name
    assert path.stat().st_size < MAX_BYTES
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count for cell in code)
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert nb.metadata["widgets"][WIDGET_STATE]["state"]  # the views are saved with it


# --- 06: semantic role labelling -------------------------------------------------------------
def _srl_sample_corpus(srl):
    return srl.value_after("cache", "CoNLL-05 in the dataset cache:") is False


@pytest.mark.slow
def test_srl_runs_clean_in_under_a_minute(srl):
    assert_clean_run(srl)


@pytest.mark.slow
def test_srl_batch_is_one_lod_tensor_and_the_view_draws_its_lod(srl):
    lod = srl.value_after("batch", "lod:")
    lengths = ast.literal_eval(_first_literal(srl.text("batch").split("lengths:")[1].strip()))
    assert len(lengths[0]) == 4 and lod == [offsets_of(lengths[0])]
    assert f"shape: ({lod[0][-1]}, 1)" in srl.text("batch")
    states = srl.widget_states()
    assert [state["_kind"] for state in states] == ["tensor", "tensor"]
    assert states[0]["_model"]["levels"][0]["offsets"] == lod[0]
    assert f"TensorView({lod[0][-1]}x1 int64, 1 LoD level(s))" in srl.text("batch-view")


@pytest.mark.slow
def test_srl_samples_have_nine_fields_and_a_two_predicate_sentence(srl):
    text = srl.text("samples")
    labels = int(re.search(r"(\d+) labels", text).group(1))
    assert len(re.findall(r"^predicate ", text, re.M)) == 2
    assert "B-V" in text
    # one row per (tags + 2) x tags: start, end, then the transitions from each tag
    assert f"crfw ({labels + 2}, {labels})" in srl.text("transitions")
    if _srl_sample_corpus(srl):
        assert labels == 11 and "B-A0" in text and "I-AM-LOC" in text


@pytest.mark.slow
def test_srl_live_cells_give_emissions_one_row_per_word(srl):
    lod = srl.value_after("batch", "lod:")
    assert "re-ran: ['lookup_table_v2'" in srl.text("pretrained")
    assert "row of word 0 == table row: True" in srl.text("pretrained")
    labels = int(re.search(r"(\d+) labels", srl.text("samples")).group(1))
    assert f"emission: ({lod[0][-1]}, {labels}) lod {lod}" in srl.text("emission")
    assert f"lod={lod}" in srl.text("network")


@pytest.mark.slow
def test_srl_crf_cost_by_hand_equals_linear_chain_crf(srl):
    by_hand, op = srl.floats("cost-by-hand", r"by hand: ([\d.]+)\s+linear_chain_crf: ([\d.]+)")
    assert by_hand == pytest.approx(op, rel=1e-3)
    assert by_hand > 0  # a negative log-likelihood


@pytest.mark.slow
def test_srl_crf_cost_falls_per_step_and_per_pass(srl):
    before, after = srl.floats("step", r"loss \S+: ([\d.]+) -> ([\d.]+)")
    assert after < before
    steps = srl.value_after("steps", "cost of the first batch, step by step:")
    assert len(steps) == 6 and steps[0] == pytest.approx(after, abs=1e-3)
    assert all(b < a for a, b in zip(steps, steps[1:]))
    passes = srl.value_after("train", "cost per pass:")
    assert len(passes) == 4 and passes[-1] < passes[0] / 2
    roles = srl.value_after("roles", "ops by role:")
    assert roles["loss"] == 1 and roles["backward"] > roles["forward"] / 2 and roles["optimize"]


@pytest.mark.slow
def test_srl_decoded_tags_have_the_sentence_lengths_and_equal_viterbi_by_hand(srl):
    lengths = srl.value_after("viterbi", "sentence lengths:")
    assert lengths and srl.value_after("viterbi", "decoded lengths:") == lengths
    assert f"same as crf_decoding: True ({sum(lengths)} words)" in srl.text("viterbi-by-hand")
    shown = re.findall(r"^words: +(.*)\ngold: +(.*)\ndecoded: +(.*)$", srl.text("viterbi"), re.M)
    assert len(shown) == 3
    for words, gold, decoded in shown:
        assert len(words.split()) == len(gold.split()) == len(decoded.split())


@pytest.mark.slow
def test_srl_chunk_metrics_and_what_the_transitions_learnt(srl):
    untrained = srl.floats("untrained", r"chunks: (\d+) correct of (\d+) found")
    assert untrained[0] <= untrained[1]
    correct, found, labelled = srl.floats(
        "chunks", r"(\d+) correct, (\d+) found, (\d+) labelled")
    p, r, f1 = srl.floats("chunks", r"precision ([\d.]+)\s+recall ([\d.]+)\s+F1 ([\d.]+)")
    assert p == pytest.approx(correct / found, abs=1e-3)
    assert r == pytest.approx(correct / labelled, abs=1e-3)
    assert 0 <= f1 <= 1
    allowed, forbidden = srl.floats(
        "transitions-learnt", r"from B-X or I-X: ([-+][\d.]+), from any other tag: ([-+][\d.]+)")
    if _srl_sample_corpus(srl):
        assert f1 > 0.8
        assert allowed > forbidden and forbidden < 0


@pytest.mark.slow
def test_srl_saved_with_its_views_is_under_one_megabyte(srl, tmp_path):
    assert srl.saved_size(tmp_path) < MAX_BYTES


# --- 07: sentiment ---------------------------------------------------------------------------
def _imdb_sample_corpus(sentiment):
    return sentiment.value_after("corpus", "aclImdb in the dataset cache:") is False


def _batch_lengths(sentiment):
    return ast.literal_eval(re.search(r"lengths: (\[[\d, ]+\])",
                                      sentiment.text("batch")).group(1))


@pytest.mark.slow
def test_sentiment_runs_clean_in_under_a_minute(sentiment):
    assert_clean_run(sentiment)


@pytest.mark.slow
def test_sentiment_reviews_are_one_lod_tensor(sentiment):
    lengths = _batch_lengths(sentiment)
    lod = ast.literal_eval(re.search(r"lod: (\[\[[\d, ]+\]\])", sentiment.text("batch")).group(1))
    assert len(lengths) == 4 and lod == [offsets_of(lengths)]
    assert sentiment.value_after("batch", "labels:") == [0, 0, 1, 1]
    assert f"TensorView({lod[0][-1]}x1 int64, 1 LoD level(s))" in sentiment.text("batch-view")
    if _imdb_sample_corpus(sentiment):  # every sentiment word passed the dictionary's cutoff
        assert "<unk>" not in sentiment.text("batch").split("rows", 1)[1]


@pytest.mark.slow
def test_sentiment_dynamic_rnn_builds_a_while_loop_with_a_step_block(sentiment):
    text = sentiment.text("blocks")
    top, step = (ast.literal_eval(line.strip()) for line in text.splitlines()
                 if line.startswith("    {"))
    assert "block 0 (parent -1)" in text and "block 1 (parent 0)" in text
    for kind in ("lod_rank_table", "lod_tensor_to_array", "while", "array_to_lod_tensor"):
        assert top[kind] == 1
    assert step["shrink_rnn_memory"] == 2  # hidden and cell
    assert step["read_from_array"] == 3 and step["write_to_array"] == 3  # input, 2 memories
    assert step["sigmoid"] == 3 and step["tanh"] == 2
    model = sentiment.data("view", PROGRAM_MIME)
    assert model["stats"]["blocks"] == 2
    assert sentiment.data("view", WIDGET_MIME)["model_id"]


@pytest.mark.slow
def test_sentiment_stepper_shows_the_batch_shrinking_as_reviews_end(sentiment):
    lengths = _batch_lengths(sentiment)
    sizes = sentiment.value_after("trace", "batch per step:")
    assert sizes == [sum(n > t for n in lengths) for t in range(max(lengths))]
    ranked = sentiment.value_after("trace", "rank table (review, length):")
    assert [n for _, n in ranked] == sorted(lengths, reverse=True)
    shrinks = [(int(a), int(b)) for a, b in
               re.findall(r"memory \[(\d+), \d+\] -> \[(\d+), \d+\]", sentiment.text("trace"))]
    assert [after for _, after in shrinks] == sizes
    first_shrink = next(t for t, n in enumerate(sizes) if n < sizes[0])
    assert sentiment.text("stepper-step").startswith(
        f"step {first_shrink}: batch {sizes[first_shrink]}")
    states = [s for s in sentiment.widget_states() if s["_kind"] == "stepper"]
    assert len(states) == 1
    assert states[0]["_model"]["dynamic_rnn"]["batch_sizes"] == sizes
    assert states[0]["step"] == first_shrink  # set from Python, synced into the saved state
    assert f"DynamicRNN batch per step: {sizes}" in sentiment.text("stepper")


@pytest.mark.slow
def test_sentiment_optimizer_adds_a_while_grad_block_and_training_lowers_the_cost(sentiment):
    text = sentiment.text("diff")
    added = int(re.search(r"ProgramDiff: \+(\d+) ops", text).group(1))
    assert added > 0 and "block 2 (parent 1)" in text
    passes = [tuple(float(v) for v in found) for found in re.findall(
        r"pass \d: train cost ([\d.]+), test cost ([\d.]+), test accuracy ([\d.]+)",
        sentiment.text("train"))]
    assert len(passes) == 4
    assert passes[-1][0] < passes[0][0]
    stacked = [float(c) for c in re.findall(r"stacked LSTM, pass \d: train cost ([\d.]+)",
                                            sentiment.text("stacked"))]
    assert len(stacked) == 2 and stacked[1] < stacked[0]
    assert "blocks: 1" in sentiment.text("stacked") and "'lstm': 3" in sentiment.text("stacked")
    if _imdb_sample_corpus(sentiment):
        assert passes[-1][2] > 0.8


@pytest.mark.slow
def test_sentiment_inference_model_reloads_and_its_probabilities_sum_to_one(sentiment):
    text = sentiment.text("save")
    assert "feed: ['words']" in text and "'__model__'" in text
    assert re.search(r"block 0: \d+ ops, \['while'\]", text)  # no loss, no optimizer ops
    assert re.search(r"block 1: \d+ ops, \[\]", text)
    rows = re.findall(r"positive ([\d.]+)\s+negative ([\d.]+)\s+sum ([\d.]+)",
                      sentiment.text("infer"))
    assert len(rows) == 3
    for positive, negative, total in rows:
        assert float(positive) + float(negative) == pytest.approx(1, abs=2e-3)
        assert total == "1.000"
    if _imdb_sample_corpus(sentiment):
        assert float(rows[0][1]) > 0.5  # read the book, forget the movie: negative
        assert float(rows[1][0]) > 0.5  # this is a great movie: positive
        assert float(rows[2][1]) > 0.5  # this is very bad: negative


@pytest.mark.slow
def test_sentiment_saved_with_its_views_is_under_one_megabyte(sentiment, tmp_path):
    kinds = sorted(state["_kind"] for state in sentiment.widget_states())
    assert kinds == ["program", "stepper", "tensor"]
    assert sentiment.saved_size(tmp_path) < MAX_BYTES
