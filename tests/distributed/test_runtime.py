"""The RPC ops between real processes, on programs built by hand (runtime_programs.py):
servers and trainers on free localhost ports, sync rounds and async updates."""
import json

import numpy as np
import pytest

from .processes import PROGRAMS, Job, free_endpoints
from .runtime_programs import expected_params

FAST = {"FLAGS_rpc_deadline": "20000", "FLAGS_rpc_round_deadline": "10000"}


def _final(job, label):
    lines = [line for line in job.output(label).splitlines() if line.startswith("final ")]
    assert lines, job.output(label)
    return np.asarray(json.loads(lines[-1][len("final "):]), dtype="float32")


def _run(tmp_path, servers, trainers, mode, steps):
    endpoints = ",".join(free_endpoints(servers))
    with Job(tmp_path, FAST) as job:
        for k in range(servers):
            job.start(f"pserver{k}", [PROGRAMS, "pserver", endpoints, k, trainers, mode])
        for t in range(trainers):
            job.start(f"trainer{t}", [PROGRAMS, "trainer", endpoints, t, trainers, mode,
                                      steps])
        codes = job.wait(timeout=60)
        assert codes == {label: 0 for label in codes}, \
            {label: job.output(label) for label in codes}
        return job, expected_params(servers, trainers, mode, steps)


@pytest.mark.parametrize("servers,trainers", [(1, 1), (2, 2)])
def test_sync_rounds_average_the_trainers_gradients(tmp_path, servers, trainers):
    job, want = _run(tmp_path, servers, trainers, mode=0, steps=4)
    for k in range(servers):  # what each server ends with
        np.testing.assert_allclose(_final(job, f"pserver{k}").reshape(3, 2), want[k],
                                   rtol=1e-6)
    for t in range(trainers):  # what each trainer fetched after its last step
        got = _final(job, f"trainer{t}")
        for k in range(servers):
            np.testing.assert_allclose(got[k].reshape(3, 2), want[k], rtol=1e-6)


def test_async_applies_every_gradient_as_it_arrives(tmp_path):
    job, want = _run(tmp_path, servers=2, trainers=2, mode=1, steps=3)
    for k in range(2):
        np.testing.assert_allclose(_final(job, f"pserver{k}").reshape(3, 2), want[k],
                                   rtol=1e-6)


def test_a_trainer_on_a_device_sends_and_receives_device_values(tmp_path):
    """On a device place (the strict stand-in: no implicit host copy passes) the gradients
    leave through explicit copies and the parameters arrive as device arrays."""
    import fluid_nb as fluid
    from fluid_nb.testing.strict_device import DeviceArray, StrictDevicePlace, counting

    from .runtime_programs import trainer_programs

    endpoint, = free_endpoints(1)
    with Job(tmp_path, FAST) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        main, startup = trainer_programs([endpoint], 0, 1, 0)
        scope, exe = fluid.Scope(), fluid.Executor(StrictDevicePlace())
        exe.run(startup, scope=scope)
        assert isinstance(scope.find_var("w0").value.array, DeviceArray)
        with counting() as count:
            for _ in range(3):
                exe.run(main, scope=scope)
        assert count["to_host"] == 3 and count["to_device"] == 3  # a gradient out, w0 in
        w0 = scope.find_var("w0").value.array
        assert isinstance(w0, DeviceArray)
        np.testing.assert_allclose(w0.get(), expected_params(1, 1, 0, 3)[0], rtol=1e-6)
        exe.close()
        assert job.wait(timeout=20) == {"pserver": 0}
