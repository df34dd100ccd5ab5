"""The teaching notebooks 02-04 run top to bottom in a real kernel and print the facts they
teach: the op counts of fit_a_line by role, the protobuf round trip, the design documents' LoD
examples, the DynamicRNN batch shrinking step by step. Saved with their widget state they stay
under 1 MB, and the stored files are exactly what ``tools/make_notebooks.py`` writes (no
outputs)."""
import ast
import importlib.util
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
PROGRAM_MIME = "application/vnd.fluid-nb.program+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MAX_SECONDS = 60  # a notebook of the course, start to end

# the design documents' examples
SENTENCE_LOD = [[0, 5, 8, 10, 14]]                       # figure (a): 4 sentences, 14 words
PARAGRAPH_LOD = [[0, 3, 5, 6, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]  # figure (b), Paddle's form
SOURCE_LENGTHS, TARGET_LENGTHS = [10, 8, 5, 7], [5, 7, 4, 6]
ENCODER_BATCHES = [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]         # lengths 10, 8, 5, 7 ranked 10, 8, 7, 5
DECODER_BATCHES = [4, 4, 4, 4, 3, 2, 1]                  # lengths 5, 7, 4, 6 ranked 7, 6, 5, 4


def _tool(name):
    """The notebook generator ``tools/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generator():
    return _tool("make_notebooks")


class Executed:
    """A notebook executed in a fresh kernel: its cells' outputs by cell id."""

    def __init__(self, name):
        self.nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = nbclient.NotebookClient(self.nb, kernel_name="python3", timeout=120,
                                         record_timing=True,
                                         resources={"metadata": {"path": str(ROOT)}})
        client.execute()
        self.cells = {cell.id: cell for cell in self.nb.cells}

    def outputs(self, cell_id):
        return self.cells[cell_id].outputs

    def text(self, cell_id):
        """Everything the cell printed or returned as plain text."""
        return "".join(o.get("text", "") if o.output_type == "stream"
                       else o.get("data", {}).get("text/plain", "") + "\n"
                       for o in self.outputs(cell_id))

    def value_after(self, cell_id, label):
        """The Python literal printed after ``label`` on its line."""
        for line in self.text(cell_id).splitlines():
            if line.startswith(label):
                return ast.literal_eval(line[len(label):].strip())
        raise AssertionError(f"cell {cell_id!r} printed no line starting with {label!r}:\n"
                             f"{self.text(cell_id)}")

    def data(self, cell_id, mime):
        found = [o.data[mime] for o in self.outputs(cell_id)
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


def assert_clean_run(executed, max_seconds=MAX_SECONDS):
    outputs = [o for cell in executed.nb.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [f"{o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"]
    assert not errors
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    # a learner's notebook finishes within a minute; how fast it runs is measured by the
    # benchmarks, and a loaded 2-core machine takes several times a quiet one's 5-10 s
    assert executed.seconds() < max_seconds


@pytest.fixture(scope="module")
def anatomy():
    return Executed("02_program_anatomy.ipynb")


@pytest.fixture(scope="module")
def lod():
    return Executed("03_lod_tensors.ipynb")


@pytest.fixture(scope="module")
def rnn():
    return Executed("04_dynamic_rnn.ipynb")


# --- stored form -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["02_program_anatomy.ipynb", "03_lod_tensors.ipynb",
                                  "04_dynamic_rnn.ipynb"])
def test_stored_notebook_has_no_outputs_and_is_what_the_generator_writes(name):
    generator = _generator()
    stored = (NOTEBOOKS / name).read_text(encoding="utf-8")
    assert stored == generator.text_of(generator.build(generator.NOTEBOOKS[name]))
    nb = nbformat.reads(stored, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    assert "widgets" not in nb.metadata


# --- 02: program anatomy ---------------------------------------------------------------------
@pytest.mark.slow
def test_program_anatomy_runs_clean_and_counts_the_ops_of_fit_a_line(anatomy):
    assert_clean_run(anatomy)
    # fc = mul + elementwise_add; square_error_cost = elementwise_sub + square; mean
    assert anatomy.value_after("build", "forward ops: 5") == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    assert "block 0 (parent -1): 9 vars, 5 ops" in anatomy.text("anatomy")
    assert "{Out=[fc_0.tmp_0]} = mul(inputs={X=[x], Y=[fc_0.w_0]}" in anatomy.text("listing")
    assert anatomy.value_after("startup", "startup ops:") == ["uniform_random", "fill_constant"]


@pytest.mark.slow
def test_program_anatomy_decodes_and_round_trips_the_protobuf_bytes(anatomy):
    text = anatomy.text("protobuf")
    size = int(re.search(r"ProgramDesc: (\d+) bytes; first 16: 0a ", text).group(1))
    block = int(re.search(r"block 0 is (\d+) bytes", text).group(1))
    assert 0 < block < size  # one block, its key and length varint before it
    assert "key 0x0a: field 1, wire type 2" in text
    assert "field 1 (idx) = 0, field 2 (parent_idx) = -1" in text
    assert "parsed back, same ops: True" in text and "parsed back, same bytes: True" in text


@pytest.mark.slow
def test_program_anatomy_shows_backward_and_optimizer_ops_appearing(anatomy):
    assert anatomy.value_after("backward", "forward only:") == {"forward": 5}
    # the loss op is the mean; backward: fill_constant (dloss = 1) + 5 grad ops
    assert anatomy.value_after("backward", "after append_backward:") == {
        "backward": 6, "forward": 4, "loss": 1}
    assert "mul <-> mul_grad" in anatomy.value_after("backward", "pairs:")
    assert anatomy.value_after("optimizer", "after the optimizer:") == {
        "backward": 6, "forward": 4, "loss": 1, "optimize": 2}
    assert anatomy.value_after("optimizer", "optimize ops:") == ["sgd", "sgd"]
    first, last = map(float, re.search(r"loss ([\d.]+) -> ([\d.]+)",
                                       anatomy.text("train")).groups())
    assert last < first / 5


@pytest.mark.slow
def test_program_anatomy_displays_the_program_model_with_an_html_fallback(anatomy):
    model = anatomy.data("display", PROGRAM_MIME)
    assert model["format"] == "fluid-nb.program" and model["stats"]["ops"] == 13
    assert sorted({op["role"] for op in model["ops"]}) == ["backward", "forward", "loss",
                                                           "optimize"]
    assert "mul_grad" in anatomy.data("display", "text/html")


@pytest.mark.slow
def test_program_view_grows_with_each_live_cell(anatomy):
    assert anatomy.data("view", WIDGET_MIME)["model_id"]
    assert anatomy.data("view", PROGRAM_MIME)["stats"]["ops"] == 0  # two data variables
    # two fc layers: mul, elementwise_add, relu; mul, elementwise_add
    assert anatomy.text("diff-fc").startswith("ProgramDiff: +5 ops, +9 vars")
    # loss (3) + fill_constant + 8 grad ops + 4 sgd
    assert anatomy.text("diff-loss").startswith("ProgramDiff: +16 ops")
    assert "21 ops" in anatomy.text("diff-loss")
    kinds = [state["_kind"] for state in anatomy.widget_states()]
    assert kinds == ["program"]


@pytest.mark.slow
def test_program_anatomy_saved_with_widget_state_is_under_one_megabyte(anatomy, tmp_path):
    assert anatomy.saved_size(tmp_path) < 1_000_000


# --- 03: LoD tensors -------------------------------------------------------------------------
@pytest.mark.slow
def test_lod_notebook_shows_the_design_documents_one_level_lod(lod):
    assert_clean_run(lod)
    assert lod.value_after("one-level", "lod:") == SENTENCE_LOD
    assert lod.value_after("one-level", "lengths:") == [[5, 3, 2, 4]]
    assert lod.text("boxes").splitlines()[-1] == "[0 1 2 3 4] [5 6 7] [8 9] [10 11 12 13]"
    assert "level 0: offsets [0, 5, 8, 10, 14] lengths [5, 3, 2, 4]" in lod.text(
        "one-level-view")


@pytest.mark.slow
def test_lod_notebook_converts_the_two_level_figure_to_paddles_lod(lod):
    assert lod.value_after("two-level", "lod:") == PARAGRAPH_LOD
    assert lod.value_after("two-level", "lengths:") == [[3, 2, 1, 2], [2, 1, 2, 2, 1, 2, 3, 1]]
    assert lod.text("two-level").splitlines()[-1] == \
        "[[0 1] [2] [3 4]] [[5 6] [7]] [[8 9]] [[10 11 12] [13]]"
    assert "2 LoD level(s)" in lod.text("two-level-view")


@pytest.mark.slow
def test_lod_notebook_runs_sequence_ops_per_sentence(lod):
    text = lod.text("sequence-ops")
    assert "sum      [10.0, 18.0, 17.0, 46.0] lod []" in text
    assert "max      [4.0, 7.0, 9.0, 13.0] lod []" in text
    assert "last     [4.0, 7.0, 9.0, 13.0] lod []" in text
    assert "expand   [4.0, 4.0, 4.0, 4.0, 4.0, 7.0, 7.0, 7.0, 9.0, 9.0, 13.0, 13.0, 13.0, " \
           "13.0] lod []" in text


@pytest.mark.slow
def test_lod_notebook_softmax_sums_to_one_per_sentence(lod):
    line = next(l for l in lod.text("sequence-ops").splitlines() if l.startswith("softmax"))
    values = ast.literal_eval(line[len("softmax"):line.index(" lod ")].strip())
    sums = [sum(values[a:b]) for a, b in zip(SENTENCE_LOD[0], SENTENCE_LOD[0][1:])]
    assert sums == pytest.approx([1, 1, 1, 1], abs=0.01)
    assert line.endswith(f"lod {SENTENCE_LOD}")


@pytest.mark.slow
def test_lod_notebook_pools_two_levels_down_to_paragraphs(lod):
    text = lod.text("two-level-ops")
    assert "sentence sums:  [1.0, 2.0, 7.0, 11.0, 7.0, 17.0, 33.0, 13.0] lod [[0, 3, 5, 6, 8]]" \
        in text
    assert "paragraph sums: [10.0, 18.0, 17.0, 46.0] lod []" in text


@pytest.mark.slow
def test_lod_notebook_shows_an_empty_sequence(lod):
    text = lod.text("empty")
    assert "offsets [0, 2, 2, 5] lengths [2, 0, 3] empty [1]" in text
    assert "[0 1] [] [2 3 4]" in text
    assert "sum      [1.0, 0.0, 9.0] lod []" in text  # pad_value for the empty one
    assert text.rstrip().endswith("lod [[0, 2, 2, 5]]")  # softmax keeps the empty sequence


@pytest.mark.slow
def test_lod_notebook_saved_with_three_tensor_views_is_under_one_megabyte(lod, tmp_path):
    states = lod.widget_states()
    assert [state["_kind"] for state in states] == ["tensor"] * 3
    assert sorted(len(state["_model"]["levels"]) for state in states) == [1, 1, 2]
    assert lod.saved_size(tmp_path) < 1_000_000


# --- 04: DynamicRNN --------------------------------------------------------------------------
def _shrinks(text):
    """(rows before, rows after) of the memory at each printed step."""
    return [(int(a), int(b)) for a, b in re.findall(r"memory \[(\d+), \d+\] -> \[(\d+), \d+\]",
                                                    text)]


@pytest.mark.slow
def test_dynamic_rnn_notebook_builds_the_fluid_machinery_and_runs(rnn):
    assert_clean_run(rnn)
    assert rnn.value_after("build", "block 0:") == {
        "lod_rank_table": 2, "lod_tensor_to_array": 2, "reorder_lod_tensor_by_rank": 2,
        "while": 2, "array_to_lod_tensor": 2}
    assert "prediction: (22, 23) lod [[0, 5, 12, 16, 22]]" in rnn.text("build")


@pytest.mark.slow
def test_encoder_batch_shrinks_4_4_4_4_4_3_3_2_1_1_for_lengths_10_8_5_7(rnn):
    assert rnn.value_after("encoder-trace", "rank table (index, length):") == [
        (0, 10), (1, 8), (3, 7), (2, 5)]
    assert rnn.value_after("encoder-trace", "encoder batch per step:") == ENCODER_BATCHES
    text = rnn.text("encoder-trace")
    assert [int(n) for n in re.findall(r"step \d+: batch (\d+)", text)] == ENCODER_BATCHES
    assert [after for _, after in _shrinks(text)] == ENCODER_BATCHES
    # step 5 reads the 6th word of the sequences still running, longest first
    assert "step 5: batch 3, sequences [0, 1, 3], words [6, 16, 29]" in text


@pytest.mark.slow
def test_decoder_sorts_the_external_memory_by_the_step_inputs_rank_table(rnn):
    text = rnn.text("decoder-trace")
    assert text.startswith("rank table order: [1, 3, 0, 2] sorted lengths: [7, 6, 5, 4]")
    memory = text.split("external memory, sorted:\n")[1].splitlines()[:4]
    assert [line.split()[0] + "-" + line.split()[-1] for line in memory] == [
        "11-18", "24-30", "1-10", "19-23"]  # the documents' sorted external memory
    assert rnn.value_after("decoder-trace", "decoder batch per step:") == DECODER_BATCHES
    assert [after for _, after in _shrinks(text)] == DECODER_BATCHES
    assert "step 6: batch 1, memory [2, 4] -> [1, 4], encoder states 8 rows, lod [[0, 8]]" \
        in text


@pytest.mark.slow
def test_decoder_outputs_come_back_in_input_order(rnn):
    text = rnn.text("restore")
    assert "output steps: 7" in text
    assert re.findall(r"sequence (\d) \(rank (\d), (\d) steps\) -> rows (\d+)\.\.(\d+)", text) == [
        ("0", "2", "5", "0", "5"), ("1", "0", "7", "5", "12"), ("2", "3", "4", "12", "16"),
        ("3", "1", "6", "16", "22")]
    assert "prediction lod: [[0, 5, 12, 16, 22]] == target lod: True" in text
    conditions = re.findall(r"condition (True|False)", rnn.text("iterations"))
    assert conditions == ["True"] * 6 + ["False"]


@pytest.mark.slow
def test_dynamic_rnn_steppers_are_saved_with_their_batches_under_one_megabyte(rnn, tmp_path):
    assert rnn.data("stepper", WIDGET_MIME)["model_id"]
    assert "DynamicRNN batch per step: [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]" in rnn.text("stepper")
    assert rnn.text("stepper-step").split() == ["7", "2"]
    states = rnn.widget_states()
    assert [state["_kind"] for state in states] == ["stepper", "stepper"]
    by_steps = {len(s["_model"]["iterations"]): s for s in states}
    assert by_steps[10]["_model"]["dynamic_rnn"]["batch_sizes"] == ENCODER_BATCHES
    assert by_steps[10]["step"] == 7  # set from Python, synced into the saved state
    assert by_steps[7]["_model"]["dynamic_rnn"]["batch_sizes"] == DECODER_BATCHES
    size = rnn.saved_size(tmp_path)
    print(f"\n04_dynamic_rnn.ipynb saved with two steppers: {size:,} bytes")
    assert size < 1_000_000


# --- 08: memory ------------------------------------------------------------------------------
MEMORY_NOTEBOOK = "08_memory.ipynb"




@pytest.fixture(scope="module")
def memory_nb():
    return Executed(MEMORY_NOTEBOOK)


def test_stored_memory_notebook_has_no_outputs_and_is_what_its_generator_writes():
    stored = (NOTEBOOKS / MEMORY_NOTEBOOK).read_text(encoding="utf-8")
    assert stored == _tool("make_memory_notebook").text()
    nb = nbformat.reads(stored, as_version=4)
    assert all(not cell.outputs for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.slow
def test_memory_notebook_splits_the_chunk_for_three_blocks_and_merges_it_back(memory_nb):
    assert_clean_run(memory_nb)
    assert memory_nb.value_after("setup", "chunk size: 16777216 smallest block:") == 256
    text = memory_nb.text("alloc")
    # 16 MiB down to 1 KiB is 14 halvings; the 256-byte block splits a free 1 KiB twice
    assert "splits: 16 allocs: [(1000, 1024), (3000, 4096), (200, 256)]" in text
    assert memory_nb.value_after("alloc", "used:") == 1024 + 4096 + 256
    listing = [tuple(line.split()) for line in text.splitlines() if line.startswith("  ")]
    assert listing[:3] == [("0", "1024", "used"), ("1024", "256", "used"),
                           ("1280", "256", "free")]
    assert ("4096", "4096", "used") in listing
    view = memory_nb.data("alloc-view", "text/html")
    assert view.count("title='used:") == 3
    text = memory_nb.text("free")
    assert "frees: 3 merges: 16" in text
    assert memory_nb.value_after("free", "blocks:") == [(0, 0, 16777216, "free")]
    assert "used: 0 largest free: 16777216 fragmentation: 0.0" in text


@pytest.mark.slow
def test_memory_notebook_shows_the_mlp_steps_timeline_and_peak(memory_nb):
    text = memory_nb.text("mlp")
    peak, op = re.search(r"peak: (\d+) during (.+)", text).groups()
    assert re.fullmatch(r"\w+ #\d+", op)
    extra = int(re.search(r"the step needs at most (\d+) bytes more", text).group(1))
    before, after = map(int, re.search(r"before the step: (\d+) after: (\d+)", text).groups())
    assert int(peak) - before == extra and before == after  # a step leaves what it found
    assert extra > 64 * 200 * 4  # at least an activation of the batch more
    page = memory_nb.data("mlp", "text/html")
    assert "<polyline" in page and "class='fluid-nb-peak'" in page
    assert f"during {op}" in page  # the run's peak, named apart from the arena's
    lines = memory_nb.text("peak").splitlines()
    assert lines[0].startswith(f"alive after {op} :")
    rows = [line.split() for line in lines if line.startswith("fc_")]
    assert len(rows) == 4 and rows[0][0] == "fc_0.w_0" and rows[0][2] == "1048576"


@pytest.mark.slow
def test_memory_notebook_compares_eager_deletion_and_memory_optimize(memory_nb):
    found = re.findall(r"eager_delete_tensor_gb=\s*(-?[\d.]+)\s+memory_optimize=(\w+)\s+peak "
                       r"\+\s*([\d,]+) bytes", memory_nb.text("compare"))
    peaks = {(float(keep), opt == "True"): int(size.replace(",", ""))
             for keep, opt, size in found}
    assert len(peaks) == 4
    assert peaks[-1.0, False] > peaks[0.0, False]  # temporaries kept to the end of the run
    for keep in (0.0, -1.0):  # renaming never needs more memory
        assert peaks[keep, True] <= peaks[keep, False]


@pytest.mark.slow
def test_memory_notebook_shows_the_dynamic_rnn_loop_filling_and_releasing(memory_nb):
    text = memory_nb.text("rnn")
    forward, backward = map(int, re.search(
        r"forward loop: (\d+) in the backward loop: (\d+)", text).groups())
    # 10 steps of the longest sequence, several ops each, both ways
    assert forward >= 10 * 3 and backward >= 10 * 3
    before, mid, after = map(int, re.search(
        r"used: before (\d+) end of the forward loop (\d+) after (\d+)", text).groups())
    assert mid > before == after
    peak, op = re.search(r"peak (\d+) during (.+)", text).groups()
    assert int(peak) >= mid and "(block " in op


@pytest.mark.slow
def test_memory_notebook_saves_its_memory_views_under_one_megabyte(memory_nb, tmp_path):
    states = memory_nb.widget_states()
    assert [state["_kind"] for state in states] == ["memory"] * 3  # alloc, MLP, RNN
    peaks = [s["_model"]["timeline"]["peak"]["label"] for s in states if s["_model"]["timeline"]]
    assert len(peaks) == 2 and all(re.fullmatch(r"\w+ #\d+( \(block \d\))?", p) for p in peaks)
    assert memory_nb.saved_size(tmp_path) < 1_000_000


# --- 09: the compiler ----------------------------------------------------------------------------
COMPILER_NOTEBOOK = "09_compiler.ipynb"




@pytest.fixture(scope="module")
def compiler_nb():
    return Executed(COMPILER_NOTEBOOK)


def test_stored_compiler_notebook_has_no_outputs_and_is_what_its_generator_writes():
    stored = (NOTEBOOKS / COMPILER_NOTEBOOK).read_text(encoding="utf-8")
    assert stored == _tool("make_compiler_notebook").text()
    nb = nbformat.reads(stored, as_version=4)
    assert all(not cell.outputs for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.slow
def test_compiler_notebook_shows_the_seeds_listing_and_runs_it(compiler_nb):
    assert_clean_run(compiler_nb)
    listing = compiler_nb.text("seeds")
    assert "static void fluid_cpp_assign_0(void** v)" in listing
    assert "mul(v_X, v_W, v_Y, 4, 3, 2);" in listing  # variables by identifiers of its own
    assert "fluid_cpp_assign_0(v);\n  fluid_cpp_mul_1(v);" in listing
    assert "equal to X @ W: True" in compiler_nb.text("seeds-run")


@pytest.mark.slow
def test_compiler_notebook_trains_fit_a_line_compiled_as_the_interpreter(compiler_nb):
    text = compiler_nb.text("train")
    assert "fallbacks: []" in text
    interpreted = re.search(r"interpreted: (\[.*\])", text).group(1)
    compiled = re.search(r"compiled:\s+(\[.*\])", text).group(1)
    # (printed to 5 decimals: equal strings would ask the two orders of float32 additions
    # to round alike, which a BLAS of another CPU need not)
    assert np.allclose(ast.literal_eval(interpreted), ast.literal_eval(compiled), rtol=0,
                       atol=1.01e-5)  # (one unit of the last printed decimal)
    assert compiler_nb.value_after("train", "largest relative difference over 50 steps:") < 1e-5
    speedup = float(re.search(r"speed-up ([\d.]+)x", compiler_nb.text("speed")).group(1))
    assert speedup > 1.5


@pytest.mark.slow
def test_compiler_notebook_shows_the_graph_and_compiles_the_dynamic_rnn(compiler_nb):
    assert any(state.get("title") == "fit_a_line, compiled"
               for state in compiler_nb.widget_states())
    text = compiler_nb.text("rnn")
    assert "fallbacks: []" in text and "blocks: 3" in text
    interpreted = re.search(r"interpreted (\[.*\])", text).group(1)
    compiled = re.search(r"compiled\s+(\[.*\])", text).group(1)
    assert np.allclose(ast.literal_eval(interpreted), ast.literal_eval(compiled), rtol=1e-5)
    assert "while (condition(" in text


@pytest.mark.slow
def test_compiler_notebook_compiles_lenet_and_names_what_it_cannot(compiler_nb):
    text = compiler_nb.text("lenet")
    assert "fluid_cpp_conv2d_0" in text and "fluid_cpp_pool2d_3" in text
    assert "same classes: True" in text
    text = compiler_nb.text("fallback")
    assert "not compiled: [(0, 'cumsum', 'no emitter for this op type')]" in text
    assert "runs: [('interpreter', [0]), ('native', [1, 2])]" in text
    assert "split run gives the interpreter's values: True" in text


@pytest.mark.slow
def test_compiler_notebook_exports_lenet_and_reports_the_lod_models(compiler_nb):
    text = compiler_nb.text("onnx-lenet")
    assert "12 of 12 ops converted (opset 17); written to" in text
    assert compiler_nb.value_after("onnx-lenet", "largest difference from the executor:") < 1e-5
    text = compiler_nb.text("onnx-lod")
    assert "words has a LoD: the model takes it padded" in text
    assert "text classifier: all converted: True" in text
    assert "DynamicRNN: all converted: True" in text


@pytest.mark.slow
def test_compiler_notebook_exports_control_flow_and_views_the_onnx_model(compiler_nb):
    text = compiler_nb.text("onnx-control-flow")
    assert "conditional_block  converted" in text and "while              converted" in text
    differences = re.findall(r"largest difference: ([\d.e-]+)", text)
    assert len(differences) == 2 and all(float(d) < 1e-5 for d in differences)
    model = next(state["_model"] for state in compiler_nb.widget_states()
                 if state.get("title") == "flow.onnx")
    assert len(model["blocks"]) >= 2
    assert {"If", "Loop"} <= {op["type"] for op in model["ops"]}
    assert compiler_nb.value_after("onnx-lod", "DynamicRNN in onnxruntime, largest difference:") \
        < 1e-5


# --- 10: distributed training ------------------------------------------------------------------
DISTRIBUTED_NOTEBOOK = "10_distributed.ipynb"
#: the notebook's last section starts a local Ray cluster: about 10 s on a quiet machine,
#: 30-70 s seen on a loaded 2-core one, on top of its job's few seconds
RAY_SECONDS = 120


def _seconds_between(executed, first, last):
    """From cell ``first`` starting to cell ``last`` finishing."""
    start = executed.cells[first].metadata["execution"]["iopub.execute_input"]
    end = executed.cells[last].metadata["execution"]["shell.execute_reply"]
    return (datetime.fromisoformat(end.rstrip("Z"))
            - datetime.fromisoformat(start.rstrip("Z"))).total_seconds()


@pytest.fixture(scope="module")
def distributed_nb():
    return Executed(DISTRIBUTED_NOTEBOOK)


def test_stored_distributed_notebook_has_no_outputs_and_is_what_its_generator_writes():
    stored = (NOTEBOOKS / DISTRIBUTED_NOTEBOOK).read_text(encoding="utf-8")
    assert stored == _tool("make_distributed_notebook").text()
    nb = nbformat.reads(stored, as_version=4)
    assert all(not cell.outputs for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.slow
def test_distributed_notebook_shows_the_split_programs(distributed_nb):
    assert_clean_run(distributed_nb, 2 * MAX_SECONDS + RAY_SECONDS)
    text = distributed_nb.text("fit-a-line")
    assert "send           ['fc_0.w_0@GRAD.trainer_0'] -> ['127.0.0.1:6171']" in text
    assert "optimizer ops left in the trainer: []" in text
    assert distributed_nb.value_after("fit-a-line", "127.0.0.1:6170 holds") == ["fc_0.b_0"]
    assert "block 1: ['sum', 'scale', 'sgd']" in distributed_nb.text("fit-a-line-servers")
    mlp = distributed_nb.text("mlp")
    assert "('fc_0.w_0.block0', [392, 200]), ('fc_0.w_0.block1', [392, 200])" in mlp
    trainer = distributed_nb.text("mlp-trainer").splitlines()
    assert [line.split()[0] for line in trainer].count("split_byref") == 2
    assert trainer[-2:] == ["concat         ['fc_0.w_0']", "concat         ['fc_1.w_0']"]
    assert "('fc_0.w_0_moment1_0', [392, 200])" in distributed_nb.text("mlp-server")
    sparse = distributed_nb.text("sparse")
    assert "the gradient is SELECTED_ROWS" in sparse and "split_selected_rows" in sparse
    assert "trainer startup makes the table with ['fake_init']" in sparse
    saved = distributed_nb.text("save").splitlines()
    assert len(saved) == 6 and all(line.endswith("same bytes again: True") for line in saved)
    for cell in ("fit-a-line-view", "mlp-view"):
        model = distributed_nb.data(cell, PROGRAM_MIME)
        assert model["lanes"] == ["trainer 0", "pserver 127.0.0.1:6170",
                                  "pserver 127.0.0.1:6171"]
        assert model["stats"]["exchanges"] > 0


@pytest.mark.slow
def test_distributed_notebook_trains_with_two_servers_as_one_process_does(distributed_nb,
                                                                            tmp_path):
    text = distributed_nb.text("train")
    assert "job exit status: 0" in text
    assert text.count("pserver.") == 2 and text.count("trainer.") == 2
    difference = distributed_nb.value_after(
        "compare", "largest difference, job mean vs single process:")
    assert difference < 1e-5
    assert "image/svg+xml" in {k for o in distributed_nb.outputs("compare")
                               for k in o.get("data", {})}
    # it starts and stops 4 processes (the Ray section after it is timed apart)
    assert _seconds_between(distributed_nb, "setup", "compare") < 2 * MAX_SECONDS
    assert distributed_nb.saved_size(tmp_path) < 1_000_000


@pytest.mark.slow
def test_distributed_notebook_watches_a_job_on_a_local_ray_cluster(distributed_nb):
    placed = distributed_nb.text("ray-job")
    ray_installed = importlib.util.find_spec("ray") is not None
    assert ("placed by a local Ray cluster" if ray_installed else "placed by this machine") \
        in placed
    assert distributed_nb.value_after("ray-wait", "trainer exit statuses:") == [0, 0]
    rows = distributed_nb.text("ray-wait").splitlines()[1:]
    assert [row.split()[:4] for row in rows] == [
        [label, "finished", "steps", "200"]
        for label in ("pserver.0", "pserver.1", "trainer.0", "trainer.1")]
    # the view's model as the kernel left it (saved with the notebook's widget state)
    job = next(state["_job"] for state in distributed_nb.widget_states()
               if state.get("_kind") == "job")
    assert len(job["processes"]) == 4 and job["done"]
    assert all(p["steps"] > 0 and p["exit_code"] == 0 for p in job["processes"])
    assert all(sum(p["bytes_sent"].values()) > 0 for p in job["processes"])
    assert _seconds_between(distributed_nb, "ray-job", "ray-wait") < RAY_SECONDS
