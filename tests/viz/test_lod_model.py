"""The LoD tensor model: every level's offsets and lengths side by side, the nested sequence
tree, empty sequences, rows tagged with their sequence, caps that keep it small."""
import json

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument
from fluid_nb.viz.lod_model import lod_from_row_offsets, lod_model

# the design documents' examples; their two-level figure counts both levels in rows
ONE_LEVEL = [[0, 5, 8, 10, 14]]
TWO_LEVEL_ROWS = [[0, 5, 8, 10, 14], [0, 2, 3, 5, 7, 8, 10, 13, 14]]
TWO_LEVEL = [[0, 3, 5, 6, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]  # the same, as offset LoD


def rows(n, width=1):
    return np.arange(n * width, dtype="float32").reshape(n, width)


def leaves(node):
    if not node["children"]:
        return [node]
    return [leaf for child in node["children"] for leaf in leaves(child)]


def test_model_is_json_with_its_format_and_version():
    model = lod_model((rows(14), ONE_LEVEL))
    assert model["format"] == "fluid-nb.lod" and model["version"] == 1
    assert json.loads(json.dumps(model, allow_nan=False)) == model


def test_one_level_example_offsets_and_lengths_side_by_side():
    model = lod_model(fluid.create_lod_tensor(rows(14), [[5, 3, 2, 4]], fluid.CPUPlace()))
    (level,) = model["levels"]
    assert level["offsets"] == [0, 5, 8, 10, 14]
    assert level["lengths"] == [5, 3, 2, 4]
    assert level["count"] == 4 and level["empty"] == [] and not level["truncated"]
    assert [level["offsets"] for level in model["levels"]] == ONE_LEVEL
    assert model["shape"] == [14, 1] and model["dtype"] == "float32"
    assert model["place"] == "CPUPlace" and model["bytes"] == 14 * 4 and model["rows"] == 14


def test_one_level_example_tree_spans_rows():
    model = lod_model((rows(14), ONE_LEVEL))
    spans = [(s["index"], s["start"], s["end"], s["length"], s["rows"])
             for s in model["sequences"]]
    assert spans == [(0, 0, 5, 5, [0, 5]), (1, 5, 8, 3, [5, 8]), (2, 8, 10, 2, [8, 10]),
                     (3, 10, 14, 4, [10, 14])]
    assert all(s["children"] == [] and not s["empty"] for s in model["sequences"])


def test_rows_are_tagged_with_their_top_level_sequence():
    model = lod_model((rows(14), ONE_LEVEL))
    tags = [r["sequence"] for r in model["data"]["rows"]]
    assert tags == [0] * 5 + [1] * 3 + [2] * 2 + [3] * 4
    assert [r["values"] for r in model["data"]["rows"][:2]] == [[0.0], [1.0]]


def test_two_level_figure_in_rows_converts_to_offset_lod():
    assert lod_from_row_offsets(TWO_LEVEL_ROWS) == TWO_LEVEL
    assert lod_from_row_offsets(ONE_LEVEL) == ONE_LEVEL
    with pytest.raises(InvalidArgument, match="expected to be boundaries of level 1 too"):
        lod_from_row_offsets([[0, 4, 14], [0, 2, 3, 5, 14]])


def test_two_level_example_levels():
    model = lod_model((rows(14), lod_from_row_offsets(TWO_LEVEL_ROWS)))
    top, inner = model["levels"]
    assert top["offsets"] == [0, 3, 5, 6, 8] and top["lengths"] == [3, 2, 1, 2]
    assert inner["offsets"] == [0, 2, 3, 5, 7, 8, 10, 13, 14]
    assert inner["lengths"] == [2, 1, 2, 2, 1, 2, 3, 1]
    assert top["count"] == 4 and inner["count"] == 8
    # the figure's two row-offset lists, side by side with the offsets
    assert [level["row_offsets"] for level in model["levels"]] == TWO_LEVEL_ROWS


def test_two_level_example_tree_nests_level_one_in_level_zero():
    model = lod_model((rows(14), TWO_LEVEL))
    top = model["sequences"]
    # level-0 sequence i holds level-1 sequences start..end, and the rows they cover
    assert [(s["start"], s["end"], s["length"]) for s in top] == \
        [(0, 3, 3), (3, 5, 2), (5, 6, 1), (6, 8, 2)]
    assert [s["rows"] for s in top] == [[0, 5], [5, 8], [8, 10], [10, 14]]
    assert [[c["index"] for c in s["children"]] for s in top] == [[0, 1, 2], [3, 4], [5], [6, 7]]
    assert [leaf["rows"] for s in top for leaf in leaves(s)] == \
        [[0, 2], [2, 3], [3, 5], [5, 7], [7, 8], [8, 10], [10, 13], [13, 14]]
    assert [leaf["length"] for s in top for leaf in leaves(s)] == [2, 1, 2, 2, 1, 2, 3, 1]


def test_two_level_example_rows_carry_a_path_through_the_levels():
    model = lod_model((rows(14), TWO_LEVEL))
    data = model["data"]["rows"]
    assert [r["sequence"] for r in data] == [0] * 5 + [1] * 3 + [2] * 2 + [3] * 4
    assert [r["path"][1] for r in data] == [0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 6, 7]
    assert all(r["path"][0] == r["sequence"] for r in data)


def test_empty_sequences_are_present_and_flagged():
    model = lod_model((rows(6), [[0, 2, 2, 6, 6]]))
    level = model["levels"][0]
    assert level["lengths"] == [2, 0, 4, 0] and level["empty"] == [1, 3]
    empty = [s for s in model["sequences"] if s["empty"]]
    assert [(s["index"], s["rows"], s["length"]) for s in empty] == [(1, [2, 2], 0),
                                                                    (3, [6, 6], 0)]
    # no row belongs to an empty sequence
    assert [r["sequence"] for r in model["data"]["rows"]] == [0, 0, 2, 2, 2, 2]


def test_empty_inner_sequence_in_two_levels():
    model = lod_model((rows(3), [[0, 2, 3], [0, 0, 2, 3]]))
    first = model["sequences"][0]
    assert [c["empty"] for c in first["children"]] == [True, False]
    assert model["levels"][1]["empty"] == [0]
    assert [r["path"] for r in model["data"]["rows"]] == [[0, 1], [0, 1], [1, 2]]


def test_tensor_without_lod_has_no_sequences():
    model = lod_model(np.ones((3, 2), "float32"))
    assert model["levels"] == [] and model["sequences"] == []
    assert [r["sequence"] for r in model["data"]["rows"]] == [None, None, None]
    assert model["rows"] == 3 and model["data"]["rows"][0]["values"] == [1.0, 1.0]


def test_scalar_tensor_is_one_row():
    model = lod_model(np.float32(2.5))
    assert model["rows"] == 1 and model["shape"] == []
    assert model["data"]["rows"] == [{"row": 0, "sequence": None, "path": [], "values": [2.5]}]


def test_rows_and_values_are_capped():
    model = lod_model((rows(100, 40), [[0, 60, 100]]), max_rows=5, max_values=3)
    data = model["data"]
    assert data["shown"] == 5 and data["total"] == 100 and data["truncated"]
    assert data["values_truncated"] and all(len(r["values"]) == 3 for r in data["rows"])
    assert data["rows"][1]["values"] == [40.0, 41.0, 42.0]


def test_many_sequences_are_capped_per_level_and_in_the_tree():
    lengths = [1] * 50
    offsets = list(range(51))
    model = lod_model((rows(50), [offsets]), max_sequences=10, max_rows=50)
    level = model["levels"][0]
    assert level["count"] == 50 and level["truncated"]
    assert level["offsets"] == offsets[:11] and level["lengths"] == lengths[:10]
    assert len(model["sequences"]) == 10 and model["sequences_truncated"]


def test_tree_covers_the_sequences_of_the_shown_rows():
    model = lod_model((rows(14), TWO_LEVEL), max_rows=6)
    top = model["sequences"]
    assert [s["index"] for s in top] == [0, 1]  # rows 0-5 lie in sequences 0 and 1
    assert [c["index"] for c in top[1]["children"]] == [3]  # sub-sequence 4 starts at row 7
    assert model["sequences_truncated"] and model["levels"][0]["lengths"] == [3, 2, 1, 2]
    whole = lod_model((rows(6), [[0, 2, 6, 6]]))
    assert [s["empty"] for s in whole["sequences"]] == [False, False, True]
    assert not whole["sequences_truncated"]


def test_non_finite_values_are_json_strings():
    model = lod_model(np.array([[np.nan, np.inf, -np.inf, 1.0]], "float64"))
    assert model["data"]["rows"][0]["values"] == ["nan", "inf", "-inf", 1.0]
    json.dumps(model, allow_nan=False)


def test_integer_and_bool_values_keep_their_type():
    model = lod_model(np.array([[1, 2]], "int64"))
    assert model["data"]["rows"][0]["values"] == [1, 2] and model["dtype"] == "int64"
    assert lod_model(np.array([True]))["data"]["rows"][0]["values"] == [True]


def test_uninitialised_tensor():
    model = lod_model(fluid.LoDTensor())
    assert not model["initialized"] and model["rows"] == 0 and model["shape"] == []
    assert model["data"]["rows"] == [] and model["dtype"] is None


def test_live_variable_gives_its_value_and_name():
    main, startup = fluid.Program(), fluid.Program()
    value = fluid.create_lod_tensor(rows(14), [[5, 3, 2, 4]], fluid.CPUPlace())
    with fluid.live(program=main, startup_program=startup):
        x = layers.data("x", [1], dtype="float32", lod_level=1, value=value)
        y = layers.scale(x, scale=2.0)
        model = lod_model(y)
    assert model["name"] == y.name
    assert model["levels"][0]["lengths"] == [5, 3, 2, 4]
    assert model["data"]["rows"][13]["values"] == [26.0]


def test_invalid_lod_is_rejected_with_what_was_expected():
    with pytest.raises(InvalidArgument, match="last LoD level expected to end at 14"):
        lod_model((rows(14), [[0, 5, 8, 10, 13]]))
    with pytest.raises(InvalidArgument, match="lod as a list of offset lists"):
        lod_model((rows(3), "0,3"))
    with pytest.raises(InvalidArgument, match="max_rows expected an int >= 0"):
        lod_model(rows(3), max_rows=-1)
    with pytest.raises(InvalidArgument, match="value expected a LoDTensor"):
        lod_model(object())
