"""The multi-machine path of ``fluid-nb launch`` for real, on one machine: 127.0.0.2 and
127.0.0.3 (loopback addresses, each standing for a host) run one launcher each, as two
machines would (``--ips 127.0.0.2,127.0.0.3 --node-ip <its own>``, the same command
otherwise). Each launcher starts the server and the trainer of its "host", each server
listens on its host's address only (both on the same port), and sync training on the two
hosts ends with the parameters of single-process training."""
import socket
import subprocess
import sys

import numpy as np

from fluid_nb.distributed.launcher import free_ports, plan

from ..trajectories import assert_float32_losses_agree, assert_float32_runs_agree
from .test_sync import EXAMPLES, REDUCTION, _environment, _single_process

HOSTS = ("127.0.0.2", "127.0.0.3")


def _start_port():
    """A port P with P and P + 2 (each host's server and trainer) free on both hosts."""
    for _ in range(20):
        port, = free_ports(HOSTS[0], 1)
        if port + 2 < 65536 and all(_free(ip, p) for ip in HOSTS for p in (port, port + 2)):
            return port
    raise AssertionError("no common free port on the two loopback hosts")


def _free(ip, port):
    with socket.socket() as s:
        try:
            s.bind((ip, port))
        except OSError:
            return False
    return True


def test_the_plan_puts_one_server_and_one_trainer_on_each_host():
    for host in HOSTS:
        mine, node = plan(2, 2, ",".join(HOSTS), start_port=7100, node_ip=host)
        assert node == host and {p.ip for p in mine} == {host}
        assert [p.role for p in mine] == ["PSERVER", "TRAINER"]


def test_two_hosts_train_fit_a_line_to_the_single_process_parameters(tmp_path):
    port = _start_port()
    args = ["--optimizer", "sgd", "--steps", "20", "--save", str(tmp_path)]
    env = _environment()
    launches = [subprocess.Popen(
        [sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "2", "--trainers", "2",
         "--ips", ",".join(HOSTS), "--node-ip", host, "--start-port", str(port),
         "--log-dir", str(tmp_path / host), str(EXAMPLES / "fit_a_line.py"), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for host in HOSTS]
    outs = []
    try:
        for launch in launches:
            out, _ = launch.communicate(timeout=120)
            outs.append(out)
    finally:
        for launch in launches:
            launch.kill()
            launch.wait()
    for launch, out in zip(launches, outs):
        assert launch.returncode == 0, out
    for host, out in zip(HOSTS, outs):
        # each launcher started its host's two processes, on its host's address
        assert f"2 processes: pserver.{HOSTS.index(host)} {host}:{port}, " \
               f"trainer.{HOSTS.index(host)} {host}:{port + 2}" in out, out
        assert "all trainers done" in out, out
    trainers = [np.load(tmp_path / f"trainer.{t}.npz") for t in range(2)]
    _single_process("fit_a_line.py", args[:-2], tmp_path, tmp_path / "trainer.0.npz")
    local = np.load(tmp_path / "local.npz")
    names = [k[len("final/"):] for k in local.files if k.startswith("final/")]
    assert len(names) == 2
    for name in names:
        assert np.abs(local["final/" + name] - local["initial/" + name]).max() > 1e-3
        for t in trainers:
            assert_float32_runs_agree(t["final/" + name], local["final/" + name], 20,
                                      REDUCTION["fit_a_line.py"], None, name=name)
    assert_float32_losses_agree((trainers[0]["losses"] + trainers[1]["losses"]) / 2,
                                local["losses"], REDUCTION["fit_a_line.py"])
