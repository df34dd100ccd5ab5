"""A training dropout draws its mask in one pass (ops/_draws.cc) and keeps NumPy's: the mask,
the output and the generator's state after it are those of ``uniform(0, 1, shape) >= p``,
``x * mask`` and ``/ (1 - p)`` on the same RandomState, bit for bit, whether the module
reads the MT19937's words itself or asks the generator for each double, wherever in its
624 words the generator stands."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import nn


def by_numpy(random_state, x, p, upscale):
    keep = random_state.uniform(0.0, 1.0, x.shape) >= p
    mask = keep.astype(np.uint8)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = x * mask
        if upscale:
            out = out / (1.0 - p)
    return out.astype(x.dtype, copy=False), mask


def in_one_pass(random_state, x, p, upscale, own):
    generator = random_state._bit_generator
    with np.errstate(invalid="ignore", divide="ignore"), generator.lock:
        return nn._draws.dropout_draw(generator.capsule, x, p, upscale, own)


def test_the_module_reads_this_numpys_generator_state_itself():
    assert nn._layout_agrees() is True


@pytest.mark.parametrize("own", [True, False], ids=["own words", "next_double"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("upscale", [False, True], ids=["downgrade", "upscale"])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1 / 3, 1e-17, 0.9999999, 1.0])
def test_mask_values_and_generator_state_are_numpys(own, dtype, upscale, p):
    for shape in [(0,), (1,), (7, 33), (3, 700), (5000,)]:
        x = np.random.RandomState(3).randn(*shape).astype(dtype)
        if x.size > 4:
            x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        # words already drawn: none, one (a pair out of step), the last before a refill,
        # a pair straddling it
        for drawn in [0, 1, 311, 620, 623]:
            reference, ours = np.random.RandomState(9), np.random.RandomState(9)
            reference._bit_generator.random_raw(drawn)
            ours._bit_generator.random_raw(drawn)
            want_out, want_mask = by_numpy(reference, x, p, upscale)
            out, mask = in_one_pass(ours, x, p, upscale, own)
            assert out.dtype == x.dtype and out.shape == x.shape and mask.dtype == np.uint8
            assert np.array_equal(mask, want_mask), (shape, drawn)
            assert out.tobytes() == want_out.tobytes(), (shape, drawn)
            after, ours_after = reference.get_state(), ours.get_state()
            assert np.array_equal(after[1], ours_after[1]) and after[2] == ours_after[2]


@pytest.mark.parametrize("own", [True, False], ids=["own words", "next_double"])
def test_a_draw_equal_to_p_keeps_its_unit_and_one_below_drops_it(own):
    # (Paddle's rule: a unit is dropped when its draw falls below p)
    x = np.ones(3, "float32")
    for drawn in [0, 1, 622, 623]:
        reference = np.random.RandomState(21)
        reference._bit_generator.random_raw(drawn)
        first = reference.random_sample()
        for p, kept in [(first, 1), (np.nextafter(first, 1.0), 0), (np.nextafter(first, 0.0), 1)]:
            ours = np.random.RandomState(21)
            ours._bit_generator.random_raw(drawn)
            assert in_one_pass(ours, x, float(p), False, own)[1][0] == kept, (drawn, p)


def test_a_state_laid_out_otherwise_is_not_read_as_words():
    generator = np.random.MT19937(5)
    generator.random_raw(10)
    state = generator.state["state"]
    key = np.ascontiguousarray(state["key"], np.uint32)
    module = nn._draws
    assert module.layout_agrees(generator.capsule, key, int(state["pos"]))
    assert not module.layout_agrees(generator.capsule, key, int(state["pos"]) + 1)
    changed = key.copy()
    changed[100] ^= 1
    assert not module.layout_agrees(generator.capsule, changed, int(state["pos"]))


def test_an_input_it_does_not_take_is_a_typed_error():
    with pytest.raises(TypeError, match="C-contiguous float32 or float64 array, but received"):
        in_one_pass(np.random.RandomState(1), np.ones((3, 4), "float16"), 0.5, False, True)
    with pytest.raises(TypeError, match="C-contiguous"):
        in_one_pass(np.random.RandomState(1), np.ones((3, 4), "float32").T, 0.5, False, True)


def _dropout_program(dtype, seed, upscale):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[6, 50], dtype=dtype)
        out = fluid.layers.dropout(
            x, 0.3, seed=seed,
            dropout_implementation="upscale_in_train" if upscale else "downgrade_in_infer")
    mask = [op for op in main.global_block().ops if op.type == "dropout"][0].output("Mask")[0]
    return main, out, mask


@pytest.mark.parametrize("own", [True, False], ids=["own words", "next_double"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("upscale", [False, True], ids=["downgrade", "upscale"])
def test_a_seeded_dropout_run_draws_numpys_mask(own, dtype, upscale, monkeypatch):
    monkeypatch.setattr(nn, "_own_generator", own)
    main, out, mask = _dropout_program(dtype, 7, upscale)
    x = np.random.RandomState(0).uniform(-2, 2, (4, 6, 50)).astype(dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):  # a seeded dropout draws the same mask each run
        got_out, got_mask = exe.run(main, feed={"x": x}, fetch_list=[out, mask],
                                    scope=fluid.Scope())
        want_out, want_mask = by_numpy(np.random.RandomState(7), x, 0.3, upscale)
        assert np.array_equal(got_mask, want_mask)
        assert got_out.tobytes() == want_out.tobytes()


def test_a_half_precision_input_takes_numpys_way_to_the_same_mask():
    main, out, mask = _dropout_program("float16", 7, True)
    x = np.random.RandomState(0).uniform(-2, 2, (4, 6, 50)).astype("float16")
    got_out, got_mask = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": x}, fetch_list=[out, mask], scope=fluid.Scope())
    want_out, want_mask = by_numpy(np.random.RandomState(7), x, 0.3, True)
    assert np.array_equal(got_mask, want_mask)
    assert got_out.tobytes() == want_out.tobytes()
