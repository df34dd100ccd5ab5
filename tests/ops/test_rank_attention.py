"""rank_attention against a NumPy loop over instances and their ranked neighbours, its
RankParam gradient against float64 finite differences, and bad RankOffsets refused."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument
from .op_test import OpCase, assert_build_fails, run_case, table_tests

RNG = np.random.RandomState(11)
K, D, C = 3, 2, 4


def offsets(rows):
    """RankOffset rows [rank, (rank_k, index_k) x K] as int32."""
    return np.array(rows, "int32")


# five instances: full, partial (missing slots), one without a rank, one sharing blocks
OFFSET = offsets([[1, 1, 0, 2, 1, 3, 2],
                  [2, 1, 3, -1, 0, 3, 4],
                  [-1, 1, 0, 2, 1, 3, 2],
                  [3, 2, 2, 2, 4, -1, 0],
                  [1, 1, 4, 2, 3, 3, 0]])


def rank_attention_ref(inputs, attrs):
    x, offset, param = inputs["X"], inputs["RankOffset"], inputs["RankParam"]
    k = attrs["MaxRank"]
    n, width = x.shape
    out = np.zeros((n, param.shape[1]), x.dtype)
    helper = np.zeros((n, k * width), x.dtype)
    for i in range(n):
        own = offset[i, 0] - 1
        for slot in range(k):
            other, index = offset[i, 1 + 2 * slot] - 1, offset[i, 2 + 2 * slot]
            if own < 0 or other < 0:
                continue
            block = param[(own * k + other) * width:(own * k + other + 1) * width]
            helper[i, slot * width:(slot + 1) * width] = x[index]
            out[i] += x[index] @ block
    return {"Out": out, "InputHelp": helper,
            "InsRank": offset[:, :1].astype(x.dtype)}


def case(dtype="float32", grad=(), name=""):
    return OpCase("rank_attention",
                  {"X": RNG.uniform(-1, 1, (5, D)).astype(dtype), "RankOffset": OFFSET,
                   "RankParam": RNG.uniform(-1, 1, (D * K * K, C)).astype(dtype)},
                  attrs={"MaxRank": K}, ref=rank_attention_ref, grad=list(grad),
                  grad_outputs=["Out"], name=name)


CASES = [case(name="float32"), case("float64", grad=["RankParam"], name="float64_grad")]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_a_rank_offset_of_the_wrong_width_is_refused_when_built():
    c = case()
    assert_build_fails("rank_attention", dict(c.inputs, RankOffset=OFFSET[:, :5]),
                       c.attrs, "RankOffset", "7 columns")


def test_a_parameter_of_the_wrong_height_is_refused_when_built():
    c = case()
    assert_build_fails("rank_attention", dict(c.inputs, RankParam=np.zeros((5, C), "float32")),
                       c.attrs, "RankParam", "18 rows")


def test_an_index_outside_x_is_refused_when_run():
    c = case()
    bad = OFFSET.copy()
    bad[0, 2] = 9
    c.inputs = dict(c.inputs, RankOffset=bad)
    with pytest.raises(InvalidArgument, match=r"RankOffset indices"):
        run_case(c)
