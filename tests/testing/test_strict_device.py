"""The strict device backend: CuPy's rules with nothing implicit. Arrays stay on the
(simulated) device through arithmetic, methods and NumPy's functions; nothing reaches host
data without an explicit, counted transfer; and a program runs on its place with one
transfer per feed and per fetch, giving the host's results."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.testing.strict_device import (DeviceArray, HostTransfer, StrictDevicePlace,
                                            counting, xp)


def device(values):
    return xp.asarray(np.asarray(values, dtype="float32"))


@pytest.mark.parametrize("use", [
    lambda a: np.asarray(a), lambda a: np.array(a), lambda a: float(a[0]),
    lambda a: int(a[0]), lambda a: bool(a[0] > 0), lambda a: a[0].item(),
    lambda a: a.tolist(), lambda a: list(a), lambda a: range(a[0]),
    lambda a: a + np.ones(3, "float32"), lambda a: a[np.array([0, 1])],
    lambda a: np.concatenate([a, np.ones(3, "float32")]),
], ids=["asarray", "array", "float", "int", "bool", "item", "tolist", "iterate", "index",
        "mix-host", "host-index", "concatenate-host"])
def test_nothing_reaches_host_data_implicitly(use):
    with pytest.raises(HostTransfer, match="strict device"):
        use(device([1, 2, 3]))


def test_explicit_transfers_are_counted_with_their_bytes():
    with counting() as count:
        a = device([1, 2, 3])           # host -> device
        b = xp.asarray(a)               # already there: no transfer
        back = a.get()                  # device -> host
        also = xp.asnumpy(b * 2)        # device -> host
    assert count == {"to_device": 1, "to_host": 2, "bytes": 36}
    assert isinstance(back, np.ndarray) and back.tolist() == [1, 2, 3]
    assert also.tolist() == [2, 4, 6]
    back[0] = 9  # a host copy: the device array is its own memory
    assert a.get().tolist() == [1, 2, 3]


def test_arithmetic_methods_and_numpys_functions_stay_on_the_device():
    a = xp.asarray(np.arange(6, dtype="float32").reshape(2, 3))
    results = [a + 1, 2 * a, a @ a.T, -a, a > 2, a.reshape(3, 2), a.astype("float64"),
               a.sum(axis=0), a.T, a[:, 1], a[a > 2], xp.matmul(a, a.T), xp.where(a > 2, a, 0),
               np.sum(a), np.exp(a), xp.zeros((2, 2)), xp.concatenate([a, a]),
               xp.linalg.norm(a, axis=1)]
    assert all(isinstance(r, DeviceArray) for r in results)
    total = a.sum()
    assert isinstance(total, DeviceArray) and total.shape == ()  # a 0-d array, as CuPy's
    assert total.get() == 15
    a += 1  # in place, on the device
    xp.multiply(a, 2, out=a)
    a[0, 0] = device([7])[0]
    assert a.get().tolist() == [[7, 4, 6], [8, 10, 12]]
    assert len(a) == 2 and a.shape == (2, 3) and a.dtype == np.float32


def test_a_program_runs_on_the_strict_device_as_on_the_host():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 13], "float32")
        hidden = fluid.layers.fc(x, 8, act="relu")
        out = fluid.layers.softmax(fluid.layers.fc(hidden, 3))
    feed = {"x": np.random.RandomState(0).rand(20, 13).astype("float32")}
    results = {}
    for place in (fluid.CPUPlace(), StrictDevicePlace()):
        scope, exe = fluid.Scope(), fluid.Executor(place)
        exe.run(startup, scope=scope)
        with counting() as count:
            (results[repr(place)],) = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
        if repr(place) == "StrictDevicePlace":
            assert isinstance(scope.find_var("fc_0.w_0").value.array, DeviceArray)
            assert (count["to_device"], count["to_host"]) == (1, 1)  # the feed, the fetch
    # (the host's softmax runs the compiled code's rows, a device array NumPy's formula, as
    # on a GPU: the two agree to float32 rounding)
    np.testing.assert_allclose(results["CPUPlace"], results["StrictDevicePlace"], rtol=1e-6,
                               atol=0)
