"""The book chapter notebooks 11-15 (fit_a_line, recognize_digits, image_classification,
recommender_system, machine_translation) run top to bottom in a fresh kernel and print
what each chapter teaches: the loss falling, accuracy above chance, the shapes of the
layers' outputs, the inference model reloading, and for machine translation the beam
search's sentences in their two-level LoD. Each shows its training program as a cell's
plain result (the graph's MIME bundle), and is stored executed under 1 MB.

Without the real datasets in the dataset cache the notebooks train on the small samples
of ``fluid_nb.api.dataset.samples``; the checks of what training reaches on them apply to
those samples only.
"""
import math
import re

import pytest

from .test_book_notebooks import (MAX_BYTES, NOTEBOOKS, PROGRAM_MIME, Executed,
                                  assert_clean_run)

nbformat = pytest.importorskip("nbformat")

FIT_A_LINE = "11_fit_a_line.ipynb"
DIGITS = "12_recognize_digits.ipynb"
IMAGES = "13_image_classification.ipynb"
RECOMMENDER = "14_recommender_system.ipynb"
TRANSLATION = "15_machine_translation.ipynb"
CHAPTERS = [FIT_A_LINE, DIGITS, IMAGES, RECOMMENDER, TRANSLATION]


def _numbers(text, pattern):
    """Every match of ``pattern`` in ``text`` (``^`` and ``$`` at line ends), its groups
    as floats."""
    return [[float(g) for g in found] if isinstance(found, tuple) else float(found)
            for found in re.findall(pattern, text, re.M)]


def _sample_data(executed, label):
    return executed.value_after("data", label) is False


def _graph_ops(executed):
    """The number of ops in the training program the ``graph`` cell drew."""
    return executed.data("graph", PROGRAM_MIME)["stats"]["ops"]


# --- stored form -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_is_stored_executed_with_its_graph_and_under_one_megabyte(name):
    path = NOTEBOOKS / name
    assert path.stat().st_size < MAX_BYTES
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    graph = next(cell for cell in code if cell.id == "graph")
    # the training program, shown opened at the part the chapter teaches
    assert re.search(r"viz\.show\((main_program|conv\['main'\]), reveal=", graph.source), \
        graph.source
    results = [o for o in graph.outputs if o.output_type == "execute_result"]
    assert len(results) == 1 and PROGRAM_MIME in results[0].data
    assert results[0].data[PROGRAM_MIME]["view"]["reveal"]
    assert "import fluid_nb as fluid" in code[0].source


@pytest.fixture(scope="module")
def fit_a_line():
    return Executed(FIT_A_LINE)


@pytest.fixture(scope="module")
def digits():
    return Executed(DIGITS)


@pytest.fixture(scope="module")
def images():
    return Executed(IMAGES)


@pytest.fixture(scope="module")
def recommender():
    return Executed(RECOMMENDER)


@pytest.fixture(scope="module")
def translation():
    return Executed(TRANSLATION)


# --- 11: fit_a_line --------------------------------------------------------------------------
@pytest.mark.slow
def test_fit_a_line_runs_clean_in_under_a_minute(fit_a_line):
    assert_clean_run(fit_a_line)


@pytest.mark.slow
def test_fit_a_line_program_is_one_fc_a_square_error_and_two_sgd_updates(fit_a_line):
    assert "training samples: 404  test samples: 102" in fit_a_line.text("data")
    assert fit_a_line.value_after("program", "parameters:") == {"fc_0.w_0": [13, 1],
                                                                "fc_0.b_0": [1]}
    assert fit_a_line.value_after("program", "y_predict shape:") == [-1, 1]
    assert fit_a_line.value_after("program", "test program ops:") == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    roles = fit_a_line.value_after("program", "ops by role:")
    assert roles["forward"] == 4 and roles["loss"] == 1 and roles["optimize"] == 2
    assert roles["backward"] >= 4
    assert _graph_ops(fit_a_line) == sum(roles.values())


@pytest.mark.slow
def test_fit_a_line_training_lowers_the_test_cost_towards_least_squares(fit_a_line):
    per_20 = fit_a_line.value_after("train", "2100 steps; test cost per 20 passes:")
    before = fit_a_line.floats("train", r"before training: test cost ([\d.]+)")[0]
    assert per_20[0] < before and per_20[-1] < per_20[0] / 5
    sgd, lstsq, mean = fit_a_line.floats(
        "least-squares", r"training cost: SGD ([\d.]+), least squares ([\d.]+), "
                         r"the mean price ([\d.]+)")
    assert lstsq <= sgd < mean  # least squares is the lowest training cost there is
    test_sgd = fit_a_line.floats("least-squares", r"test cost: SGD ([\d.]+)")[0]
    whole = fit_a_line.floats("least-squares", r"test program on all 102 test houses: ([\d.]+)")
    assert whole[0] == pytest.approx(test_sgd, abs=0.02)
    assert per_20[-1] == pytest.approx(test_sgd, abs=0.02)  # batch means weighted by size
    assert all(b < a for a, b in zip(per_20, per_20[1:]))
    test_mean = fit_a_line.floats("least-squares", r"test cost: .* the mean price ([\d.]+)")[0]
    assert test_sgd < test_mean / 3


@pytest.mark.slow
def test_fit_a_line_inference_model_predicts_ten_prices(fit_a_line):
    text = fit_a_line.text("infer")
    ops = fit_a_line.value_after("infer", "feed: ['x']  ops:")
    assert ops[1:3] == ["mul", "elementwise_add"]  # pruned: no loss, no sgd
    assert not {"sgd", "square", "mean"} & set(ops)
    assert "results shape: (10, 1)" in text
    rows = _numbers(text, r"^\d: ([\d.]+)  ([\d.]+)$")
    assert len(rows) == 10 and all(prediction > 0 for prediction, _ in rows)


# --- 12: recognize_digits --------------------------------------------------------------------
@pytest.mark.slow
def test_digits_runs_clean_in_under_a_minute(digits):
    assert_clean_run(digits)


@pytest.mark.slow
def test_digits_three_networks_have_the_book_sizes(digits):
    assert "image: (784,) float32 in [-1, 1]" in digits.text("data")
    text = digits.text("networks")
    weights = {name: int(count.replace(",", "")) for name, count in
               re.findall(r"^(\w+): \d+ parameters, ([\d,]+) weights", text, re.M)}
    assert weights == {
        "softmax_regression": 784 * 10 + 10,
        "multilayer_perceptron": 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10,
        # conv 5x5x1x20 + 20; batch norm's scale, shift, moving mean and variance, 4x20
        # (all four are parameters); conv 5x5x20x50 + 50; fc 800x10 + 10
        "convolutional_neural_network": 520 + 80 + 25050 + 8010}


@pytest.mark.slow
def test_digits_conv_net_shapes_halve_through_conv_and_pool(digits):
    text = digits.text("shapes")
    for name, shape in [("pool2d_0.tmp_0", "20, 12, 12"), ("pool2d_1.tmp_0", "50, 4, 4"),
                        ("prediction", "10")]:
        assert re.search(rf"{name} +compile time \[-1, {shape}\] +run \(64, {shape}\)", text)
    assert "'conv2d_1.w_0': [50, 20, 5, 5]" in text
    assert "probabilities sum to one: True" in text
    ops = int(re.search(r"convolutional_neural_network: \d+ parameters, [\d,]+ weights, "
                        r"(\d+) ops", digits.text("networks")).group(1))
    assert _graph_ops(digits) == ops  # the graph is the conv net's whole training program


@pytest.mark.slow
def test_digits_every_network_learns_above_chance(digits):
    rows = re.findall(r"^(\w+) +cost ([\d.]+) -> ([\d.]+) in 8 batches; test cost [\d.]+, "
                      r"test accuracy ([\d.]+)", digits.text("train"), re.M)
    assert [name for name, *_ in rows] == ["softmax_regression", "multilayer_perceptron",
                                           "convolutional_neural_network"]
    for name, first, last, accuracy in rows:
        assert float(last) < float(first)
        assert float(accuracy) > 0.1  # chance among ten digits
    if _sample_data(digits, "MNIST in the dataset cache:"):
        accuracies = [float(a) for *_, a in rows]
        assert accuracies[0] > 0.25 and min(accuracies[1:]) > 0.9


@pytest.mark.slow
def test_digits_reloaded_conv_net_names_a_digit(digits):
    text = digits.text("infer")
    assert "batch_norm is_test: [True]" in text
    probabilities = digits.value_after("infer", "probabilities:")
    assert len(probabilities) == 10 and sum(probabilities) == pytest.approx(1, abs=5e-3)
    written, named = (int(d) for d in re.search(
        r"Inference result of infer_(\d)\.png is: (\d)", text).groups())
    assert named == max(range(10), key=probabilities.__getitem__)
    if _sample_data(digits, "MNIST in the dataset cache:"):
        assert named == written


# --- 13: image_classification ----------------------------------------------------------------
@pytest.mark.slow
def test_images_runs_clean_in_under_a_minute(images):
    assert_clean_run(images)


@pytest.mark.slow
def test_images_resnet_stages_halve_the_image_and_double_the_channels(images):
    text = images.text("shapes")
    for stage, shape in [("conv1", (16, 32, 32)), ("res1", (16, 32, 32)),
                         ("res2", (32, 16, 16)), ("res3", (64, 8, 8)), ("pool", (64, 1, 1))]:
        assert re.search(rf"{stage} +compile time \[-1, {', '.join(map(str, shape))}\] +"
                         rf"run \(32, {', '.join(map(str, shape))}\)", text), stage
    assert re.search(r"predict +compile time \[-1, 10\] +run \(32, 10\)", text)
    assert "probabilities sum to one: True" in text
    forward = images.value_after("resnet", "forward ops:")
    # depth 8: conv1, two convs per block in three stages, two 1x1 shortcuts
    assert forward["conv2d"] == 9 and forward["batch_norm"] == 9
    assert images.value_after("resnet", "trained parameters:") == 32
    assert images.value_after("resnet", "optimizer ops:") == {"momentum": 32}
    assert "moving statistics (parameters, not trained): 18" in images.text("resnet")
    assert _graph_ops(images) > 100


@pytest.mark.slow
def test_images_a_few_steps_lower_the_cost_and_move_the_batch_norm_statistics(images):
    text = images.text("train")
    first, last = images.floats("train", r"first four ([\d.]+), last four ([\d.]+)")
    assert last < first
    assert images.floats("train", r"moved by ([\d.]+)")[0] > 0
    accuracy = images.floats("train", r"Test: cost [\d.]+, accuracy ([\d.]+)")[0]
    assert accuracy > 0.1 if not _sample_data(images, "CIFAR-10 in the dataset cache:") \
        else accuracy > 0.3
    assert "test program batch_norm is_test: [True]" in text


@pytest.mark.slow
def test_images_vgg_has_sixteen_weight_layers_and_the_reloaded_resnet_classifies(images):
    assert "VGG-16: 13 conv2d + 3 fc = 16 weight layers; 5 max pools" in images.text("vgg")
    text = images.text("infer")
    assert "input: (1, 3, 32, 32)  output: (1, 10)  sum 1.0" in text
    assert re.search(r"infer results: \w+ \(the image is a \w+\)", text)


# --- 14: recommender_system ------------------------------------------------------------------
@pytest.mark.slow
def test_recommender_runs_clean_in_under_a_minute(recommender):
    assert_clean_run(recommender)


@pytest.mark.slow
def test_recommender_towers_meet_in_a_cosine_equal_to_one_by_hand(recommender):
    assert "towers: [-1, 200] [-1, 200] -> cos_sim [-1, 1] -> scale [-1, 1]" in \
        recommender.text("program")
    tables = recommender.value_after("program", "embedding tables:")
    assert {"user_table", "gender_table", "age_table", "job_table", "movie_table"} <= set(tables)
    assert tables["gender_table"] == [2, 16] and tables["age_table"] == [7, 16]
    text = recommender.text("towers")
    assert "user features (256, 200)  movie features (256, 200)  cos_sim (256, 1)" in text
    assert "cos_sim by hand equals the op: True  rating = 5 cos: True" in text
    low, high = recommender.floats("towers", r"untrained ratings in \[([-\d.]+), ([-\d.]+)\]")
    assert -5 <= low <= high <= 5
    category_lod = recommender.value_after("towers", "category_id lod (first 6 offsets):")
    assert category_lod[0] == 0 and category_lod == sorted(category_lod)
    assert _graph_ops(recommender) > 90


@pytest.mark.slow
def test_recommender_training_beats_a_constant_guess(recommender):
    constant = recommender.floats("train", r"constant guess [-\d.]+: test cost ([\d.]+)")[0]
    passes = _numbers(recommender.text("train"),
                      r"pass \d: \d+ batches, train cost ([\d.]+), test cost ([\d.]+)")
    assert len(passes) == 3
    assert passes[-1][0] < passes[0][0] and passes[-1][1] < passes[0][1]
    assert passes[-1][1] < constant
    if _sample_data(recommender, "ml-1m in the dataset cache:"):
        assert passes[-1][1] < constant / 2


@pytest.mark.slow
def test_recommender_reloaded_model_rates_five_pairs(recommender):
    text = recommender.text("infer")
    assert "feed: ['user_id', 'gender_id', 'age_id', 'job_id', 'movie_id', 'category_id', " \
           "'movie_title']" in text
    rows = _numbers(text, r"predicted +([-\d.]+), the data says +([-\d.]+)")
    assert len(rows) == 5 and all(-5 <= predicted <= 5 for predicted, _ in rows)
    if _sample_data(recommender, "ml-1m in the dataset cache:"):
        assert sum(abs(p - truth) for p, truth in rows) / 5 < 1.5


# --- 15: machine_translation -----------------------------------------------------------------
@pytest.mark.slow
def test_translation_runs_clean_in_under_a_minute(translation):
    assert_clean_run(translation)


@pytest.mark.slow
def test_translation_samples_frame_the_target_with_start_and_end(translation):
    src = translation.value_after("data", "src_ids")
    trg = translation.value_after("data", "trg_ids ")
    nxt = translation.value_after("data", "trg_ids_next")
    assert src[0] == 0 and src[-1] == 1          # <s> ... <e>
    assert trg[0] == 0 and nxt == trg[1:] + [1]  # shifted by one, ending in <e>


@pytest.mark.slow
def test_translation_training_program_has_the_rnn_step_and_its_gradient_blocks(translation):
    text = translation.text("program")
    assert "block 1 (parent 0)" in text and "block 2 (parent 1)" in text
    assert "'shrink_rnn_memory': 1" in text and "'mul_grad': 3" in text
    assert "rnn_out: [-1, " in text and "lod_level 1" in text
    assert "context put in rank order: True" in text  # memory(init=..., need_reorder=True)
    parameters = translation.value_after("program", "parameters:")
    assert parameters["fc_1.w_0"] == [32, 32] and parameters["fc_1.w_1"] == [16, 32]
    assert "lstm_0.w_0" in parameters and "vemb" in parameters
    model = translation.data("graph", PROGRAM_MIME)
    assert model["stats"]["blocks"] == 3


@pytest.mark.slow
def test_translation_cost_falls_below_a_uniform_guess(translation):
    costs = translation.value_after("train", "cost per pass:")
    uniform = translation.floats("train", r"uniform guess over the (\d+) words: cost ([\d.]+)")
    assert uniform[1] == pytest.approx(math.log(uniform[0]), abs=1e-3)
    assert len(costs) == 30 and costs[-1] < costs[0] and costs[-1] < uniform[1]


@pytest.mark.slow
def test_translation_beam_search_gives_beam_size_sentences_per_source(translation):
    text = translation.text("decoder-decode")
    assert "block 1 (parent 0)" in text and "'beam_search'" in text and "'is_empty'" in text
    assert "'beam_search_decode', 'while'" in text
    assert "all trained:" in text and text.rstrip().endswith("True")
    lod = translation.value_after("beam-search", "translation_ids lod:")
    source_level, sentence_level = lod
    per_source = translation.value_after("beam-search", "hypotheses per source:")
    assert len(per_source) == 4 and source_level[-1] == len(sentence_level) - 1
    assert all(1 <= n <= 3 for n in per_source)  # at most beam_size
    lengths = translation.value_after("beam-search", "decoded sentence lengths:")
    assert lengths == [b - a for a, b in zip(sentence_level, sentence_level[1:])]
    assert all(2 <= n <= 8 + 1 for n in lengths)  # <s>, words, <e>; at most max_length steps
    shown = re.findall(r"^ +(-[\d.]+)  \((\d+) ids\) <s>", translation.text("beam-search"), re.M)
    assert [int(n) for _, n in shown] == lengths
    for i in range(len(per_source)):  # best first within each source
        scores = [float(s) for s, _ in shown[source_level[i]:source_level[i + 1]]]
        assert scores == sorted(scores, reverse=True)
    assert "every sentence starts with <s>: True" in translation.text("beam-search")
    first_right = translation.floats("beam-search", r"first word is the reference's: (\d) of 4")
    if _sample_data(translation, "WMT-14 in the dataset cache:"):
        assert first_right[0] >= 3  # the decoder reads the source
    assert "ended with <e> or at max_length: True" in translation.text("beam-search")
