"""A training step's trailing updates (sgd, momentum, adam, adagrad, rmsprop) are written in
place, all at once, after everything that can fail (exec/update_commit.py): parameters and
optimizer state keep their arrays when nothing else holds them, a step that fails leaves
every persistable as it was, an array the user holds is never written, and the values are
bit for bit those of new arrays. The one C call (``_fused_updates.commit``) checks every
update before it writes any."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.errors import FluidError
from fluid_nb.exec.binding import DONATE_MIN_BYTES
from fluid_nb.memory import places
from fluid_nb.memory.events import data_address
from fluid_nb.ops import _fused_updates, optimizer_ops
from tests.memory.steps import classifier

CPU = fluid.CPUPlace()

OPTIMIZERS = {
    "sgd": lambda: fluid.optimizer.SGD(0.1),
    "momentum": lambda: fluid.optimizer.Momentum(0.1, 0.9),
    "nesterov_l2": lambda: fluid.optimizer.Momentum(
        0.1, 0.9, use_nesterov=True, regularization=fluid.regularizer.L2Decay(1e-3)),
    "adam": lambda: fluid.optimizer.Adam(0.01),
    "adagrad": lambda: fluid.optimizer.Adagrad(0.05),
    "rmsprop": lambda: fluid.optimizer.RMSProp(0.01, momentum=0.5),
    "rmsprop_centered": lambda: fluid.optimizer.RMSProp(0.01, centered=True),
}


@pytest.fixture(autouse=True)
def flags_as_they_were():
    saved = dict(flags._values)
    yield
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1


def mlp(optimizer, seed=2, hidden=2048):
    """A two-layer net: its first weight, 12 x 2048 floats, is 96 KiB (updates writing less
    than DONATE_MIN_BYTES in all are not committed)."""
    main, startup, loss = classifier(12, hidden, 3, OPTIMIZERS[optimizer], seed)
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, main, scope, loss


def batch(seed, label_high=3):
    rng = np.random.RandomState(seed)
    return {"x": rng.uniform(-1, 1, (10, 12)).astype("float32"),
            "label": rng.randint(0, label_high, (10, 1)).astype("int64")}


def persistables(main, scope):
    return {v.name: scope.find_var(v.name).value.array for v in main.list_vars()
            if v.persistable and scope.find_var(v.name) is not None
            and getattr(scope.find_var(v.name).value, "array", None) is not None}


def addresses(main, scope):
    return {name: data_address(array) for name, array in persistables(main, scope).items()}


def copies(main, scope):
    return {name: array.copy() for name, array in persistables(main, scope).items()}


def assert_same_values(got, want):
    assert got.keys() == want.keys()
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_every_parameter_and_accumulator_keeps_its_array_and_the_values_are_new_arrays(
        optimizer):
    exe, main, scope, loss = mlp(optimizer)
    start = addresses(main, scope)
    losses = [exe.run(main, feed=batch(i), fetch_list=[loss], scope=scope)[0]
              for i in range(4)]  # (the first run in Python, the others in one C call)
    assert addresses(main, scope) == start
    fluid.set_flags({"FLAGS_inplace_update": False})
    twin_exe, twin_main, twin, twin_loss = mlp(optimizer)
    twin_losses = [twin_exe.run(twin_main, feed=batch(i), fetch_list=[twin_loss],
                                scope=twin)[0] for i in range(4)]
    for a, b in zip(losses, twin_losses):
        np.testing.assert_array_equal(a, b)
    assert_same_values(persistables(main, scope), persistables(twin_main, twin))


def test_an_interrupt_while_the_updates_are_prepared_leaves_every_persistable_as_it_was(
        monkeypatch):
    from fluid_nb.framework import registry
    exe, main, scope, loss = mlp("adam")
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    before, start = copies(main, scope), addresses(main, scope)
    adam = registry.get("adam")
    prepare, seen = adam.commit, []

    def interrupted_on_the_third(attrs, values, writes):
        seen.append(1)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return prepare(attrs, values, writes)

    monkeypatch.setattr(adam, "commit", interrupted_on_the_third)
    # (the plan is bound afresh: the commit is read when a plan binds its steps)
    exe2 = fluid.Executor(CPU)
    with pytest.raises(KeyboardInterrupt):
        exe2.run(main.clone(), feed=batch(1), fetch_list=[loss.name], scope=scope)
    assert len(seen) == 3
    assert_same_values(persistables(main, scope), before)
    assert addresses(main, scope) == start


def test_updates_writing_a_few_kilobytes_in_all_take_new_arrays():
    assert DONATE_MIN_BYTES > (12 * 16 + 16 * 3) * 4
    exe, main, scope, loss = mlp("adam", hidden=16)
    start = addresses(main, scope)
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    assert addresses(main, scope)["fc_0.w_0_moment1_0"] != start["fc_0.w_0_moment1_0"]


def test_with_the_inplace_flag_off_each_step_gives_new_arrays():
    fluid.set_flags({"FLAGS_inplace_update": False})
    exe, main, scope, loss = mlp("adam")
    start = addresses(main, scope)
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    now = addresses(main, scope)
    assert now["fc_0.w_0"] != start["fc_0.w_0"]
    assert now["fc_0.w_0_moment1_0"] != start["fc_0.w_0_moment1_0"]


def test_a_step_that_fails_before_its_updates_leaves_every_persistable_as_it_was():
    exe, main, scope, loss = mlp("adam")
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    before, start = copies(main, scope), addresses(main, scope)
    with pytest.raises(FluidError, match="Label"):  # a label out of range: the loss fails
        exe.run(main, feed=batch(1, label_high=9), fetch_list=[loss], scope=scope)
    assert_same_values(persistables(main, scope), before)
    assert addresses(main, scope) == start
    # and the next steps are those of a scope that never failed
    twin_exe, twin_main, twin, twin_loss = mlp("adam")
    twin_exe.run(twin_main, feed=batch(0), fetch_list=[twin_loss], scope=twin)
    for seed in (2, 3):
        got = exe.run(main, feed=batch(seed), fetch_list=[loss], scope=scope)[0]
        want = twin_exe.run(twin_main, feed=batch(seed), fetch_list=[twin_loss], scope=twin)[0]
        np.testing.assert_array_equal(got, want)
    assert_same_values(persistables(main, scope), persistables(twin_main, twin))


def test_a_held_parameter_is_never_written_and_only_its_update_takes_new_arrays():
    exe, main, scope, loss = mlp("adam")
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    start = addresses(main, scope)
    held = scope.find_var("fc_1.w_0").value.array  # the user keeps the weight's array
    saved = held.copy()
    exe.run(main, feed=batch(1), fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(held, saved)
    now = addresses(main, scope)
    moved = sorted(name for name in now if now[name] != start[name])
    # fc_1.w_0's own adam op ran as itself (new weight and moments); the others committed
    assert set(moved) <= {"fc_1.w_0", "fc_1.w_0_moment1_0", "fc_1.w_0_moment2_0",
                          "fc_1.w_0_beta1_pow_acc_0", "fc_1.w_0_beta2_pow_acc_0"}
    assert "fc_1.w_0" in moved and now["fc_0.w_0"] == start["fc_0.w_0"]
    twin_exe, twin_main, twin, twin_loss = mlp("adam")
    for seed in (0, 1):
        twin_exe.run(twin_main, feed=batch(seed), fetch_list=[twin_loss], scope=twin)
    assert_same_values(persistables(main, scope), persistables(twin_main, twin))


def test_running_out_of_memory_in_an_update_that_cannot_commit_writes_nothing(monkeypatch):
    """The held weight's adam op runs as itself first and needs new arrays; with the arena
    full it fails, and no other update has been written yet."""
    exe, main, scope, loss = mlp("adam")
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    held = scope.find_var("fc_0.w_0").value.array  # its adam op makes new arrays
    before, start = copies(main, scope), addresses(main, scope)
    taken = []
    dense_grad = optimizer_ops._dense_grad

    def full_arena_then_dense_grad(xp, grad, param, where):  # (the kernel's, not a commit's)
        size = places.host_arena().arena.chunk_size
        while size >= 256:
            try:
                taken.append(fluid.memory.alloc(CPU, size))
            except FluidError:
                size //= 2
        return dense_grad(xp, grad, param, where)

    monkeypatch.setattr(optimizer_ops, "_dense_grad", full_arena_then_dense_grad)
    try:
        with pytest.raises(FluidError, match="adam"):
            exe.run(main, feed=batch(1), fetch_list=[loss], scope=scope)
    finally:
        for address in taken:
            fluid.memory.free(CPU, address)
    assert taken
    assert_same_values(persistables(main, scope), before)
    assert addresses(main, scope) == start
    assert held is scope.find_var("fc_0.w_0").value.array


def test_two_updates_of_one_parameter_both_apply_in_program_order():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 512))  # a 128 KiB weight
        fluid.optimizer.SGD(0.1).minimize(loss)
    block = main.global_block()
    sgd = [op for op in block.ops if op.type == "sgd" and op.input("Param") == ["fc_0.w_0"]][0]
    block.append_op(type="sgd", inputs={"Param": "fc_0.w_0", "Grad": sgd.input("Grad"),
                                        "LearningRate": sgd.input("LearningRate")},
                    outputs={"ParamOut": "fc_0.w_0"})
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 64), "float32")}
    w = scope.find_var("fc_0.w_0").value.array.copy()
    for step in (1, 2):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        # d mean(x w + b) / dw = 1/512 for every weight (x all ones); two updates a step
        np.testing.assert_allclose(scope.find_var("fc_0.w_0").value.array,
                                   w - step * 2 * 0.1 / 512, rtol=1e-5, atol=1e-9)


def test_a_startup_program_gives_each_persistable_an_array_of_its_own():
    # fill_constant keeps a small constant of a run's temporaries (read-only); a bias or an
    # accumulator it fills gets a writable array of its own, which updates may write
    exe, main, scope, loss = mlp("adam")
    _, _, other, _ = mlp("adam")
    for name in ("fc_0.b_0", "fc_0.w_0_moment1_0", "fc_0.w_0_beta1_pow_acc_0"):
        array = scope.find_var(name).value.array
        assert array.flags.writeable, name
        assert array is not other.find_var(name).value.array


# --- the C call -----------------------------------------------------------------------------
def adam_arrays(dtype, size, seed):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-1, 1, size).astype(dtype), rng.uniform(-1, 1, size).astype(dtype),
            rng.uniform(-0.1, 0.1, size).astype(dtype), rng.uniform(0, 0.01, size).astype(dtype),
            np.array([0.9 ** 3], dtype), np.array([0.999 ** 3], dtype)]


def with_specials(*arrays):
    """The arrays with NaN, infinities and a signed zero among their first elements."""
    for array in arrays:
        flat = array.reshape(-1)
        flat[:4] = np.array([np.nan, np.inf, -np.inf, -0.0], array.dtype)
    return arrays


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's, on the NaN and infinities)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_commit_gives_the_separate_updates_values_bit_for_bit(dtype):
    real = np.dtype(dtype).type
    p, g, m1, m2, pow1, pow2 = adam_arrays(dtype, (17, 5), 1)
    with_specials(g)
    beta1, beta2 = real(0.9), real(0.999)
    rate, eps_hat = optimizer_ops._adam_rate(np, real(0.01), pow1[0], pow2[0], real(1e-8),
                                             real(1))
    want = [a.copy() for a in (p, m1, m2)]
    _fused_updates.adam(want[0], g, want[1], want[2], want[0], want[1], want[2], beta1, beta2,
                        rate, eps_hat)
    sp, sg = (np.random.RandomState(2).uniform(-1, 1, 40).astype(dtype) for _ in range(2))
    with_specials(sg)
    lr = np.array([0.05], "float32")
    want_sgd = _fused_updates.sgd(sp, lr, sg, False)
    # adagrad's and rmsprop's formulas as their kernels work them
    ap, ag, am = with_specials(*(np.random.RandomState(k).uniform(0, 1, 11).astype(dtype)
                                 for k in (6, 7, 8)))
    am_out = am + ag * ag
    want_ap = ap - real(lr[0]) * ag / (np.sqrt(am_out) + real(1e-6))
    rp, rg, rmg, rmom = (np.random.RandomState(k).uniform(0, 1, 13).astype(dtype)
                         for k in (9, 10, 12, 13))
    rms = np.random.RandomState(11).uniform(1, 2, 13).astype(dtype)  # (above MeanGrad^2)
    with_specials(rg)
    rms_out = real(0.9) * rms + real(1 - 0.9) * rg * rg
    rmg_out = real(0.9) * rmg + real(1 - 0.9) * rg
    rmom_out = real(0.5) * rmom + real(lr[0]) * rg / np.sqrt(rms_out - rmg_out * rmg_out
                                                           + real(1e-6))
    want_rp = rp - rmom_out
    mp, mg, mv = with_specials(*(np.random.RandomState(k).uniform(-1, 1, 9).astype(dtype)
                                 for k in (3, 4, 5)))
    # (momentum's formula as its kernel works it: the rate is the float32 array's value)
    v_out = mv * real(0.9) + (mg * real(2.0) + real(1e-3) * mp)
    want_p = mp - ((mg * real(2.0) + real(1e-3) * mp) + v_out * real(0.9)) * real(lr[0])
    _fused_updates.commit([(0, p, g, m1, m2, pow1, pow2, beta1, beta2, rate, eps_hat),
                           (1, sp, sg, lr),
                           (2, mp, mg, mv, lr, 0.9, 2.0, 1e-3, True),
                           (3, ap, ag, am, lr, 1e-6),
                           (4, rp, rg, rms, rmg, rmom, lr, 0.9, 1 - 0.9, 1e-6, 0.5)])
    for got, expected in zip((p, m1, m2), want):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(pow1, np.array([0.9 ** 3], dtype) * beta1)
    np.testing.assert_array_equal(pow2, np.array([0.999 ** 3], dtype) * beta2)
    np.testing.assert_array_equal(sp, want_sgd)
    np.testing.assert_array_equal(mv, v_out)
    np.testing.assert_array_equal(mp, want_p)
    np.testing.assert_array_equal(am, am_out)
    np.testing.assert_array_equal(ap, want_ap)
    for got, want in ((rms, rms_out), (rmg, rmg_out), (rmom, rmom_out), (rp, want_rp)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad, message", [
    (lambda a: a.__setitem__(3, a[3].astype("float64")), "moment2 expected 85 element"),
    (lambda a: a.__setitem__(2, a[0]), "overlap"),
    (lambda a: a[2].setflags(write=False), "writable"),
    (lambda a: a.__setitem__(1, a[1][:, :2]), "C-contiguous"),
    (lambda a: a.__setitem__(4, np.ones(2, "float32")), "beta1_pow expected 1 element"),
])
def test_commit_checks_every_update_before_it_writes_any(bad, message):
    good = adam_arrays("float32", (17, 5), 1)
    arrays = adam_arrays("float32", (17, 5), 2)
    bad(arrays)
    saved = [a.copy() for a in good]
    scalars = (0.9, 0.999, 0.01, 1e-8)
    with pytest.raises((TypeError, ValueError), match=message):
        _fused_updates.commit([(0, *good, *scalars), (0, *arrays, *scalars)])
    for got, was in zip(good, saved):
        np.testing.assert_array_equal(got, was)


def test_commit_names_a_kind_it_does_not_know():
    with pytest.raises(ValueError, match="update 0 expected kind 0"):
        _fused_updates.commit([(7, np.ones(2, "float32"))])
    with pytest.raises(TypeError, match="update 0 expected a tuple"):
        _fused_updates.commit([[1]])
