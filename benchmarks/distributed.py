"""Parameter-server training on this machine: steps per second and bytes per step of the MLP
of examples/distributed/mlp.py (64-256-64-10, batch 64, SGD) with 1 and 2 servers and 1 and
2 trainers, in sync and async mode, next to single-process training on the same batches.

    python benchmarks/distributed.py [--steps 200] [--rounds 3]
    python benchmarks/distributed.py --bytecodes [--steps 200]

Every server and trainer is a process of its own (started by fluid_nb.distributed.launcher,
as `fluid-nb launch` does), talking gRPC over localhost. A trainer times ``--steps`` steps
after 10 warm-up steps; in sync mode a step is a round (each of the trainers on its share of
the 64 rows), in async mode each trainer steps on its own share at its own pace (a job step
is then a whole batch's worth of trainer steps). Each configuration runs ``--rounds``
times, in turns, and the fastest run is kept. Bytes are the gRPC messages a trainer sends
(gradients, barriers, requests) and receives (parameters) per step, and calls the gRPC
calls it makes per step, as counted by its RPC client (a step, sync or async, is one
``SendAndGetVariables`` per server). The reference is
one process training on the whole batch; the ratio is the job's steps per second over it.
All processes share this machine's cores (the figures are for the whole job on one
machine, not for a cluster).

``--bytecodes`` counts instead the Python bytecodes of a sync 1 x 1 step (a count the
machine's load does not move): the trainer's timed steps, the server's threads (gRPC's
and the handlers', warm-up steps included, over the steps), and single-process training's
step for comparison.
"""
import argparse
import io
import json
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "distributed"))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.distributed import client, launcher as launch  # noqa: E402
from mlp import data, network  # noqa: E402
from _timing import opcode_tracer  # noqa: E402

BATCH, WARMUP, LEARNING_RATE = 64, 10, 0.1


def programs():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        feeds, loss = network()
        fluid.optimizer.SGD(learning_rate=LEARNING_RATE).minimize(loss)
    return main, startup, feeds, loss


def train(exe, program, feeds, loss, batches, part, parts, counts=None):
    """Seconds per step over ``batches`` after the warm-up ones (``counts``: a dict the
    timed steps' bytecodes are counted into, see _timing.opcode_tracer)."""
    def step(batch):
        exe.run(program, feed={n: np.array_split(c, parts)[part] for n, c in zip(feeds, batch)},
                fetch_list=[loss])
    for batch in batches[:WARMUP]:
        step(batch)
    rpc = client()
    sent, received, calls = rpc.sent_bytes, rpc.received_bytes, sum(rpc.calls.values())
    start = time.perf_counter()
    if counts is not None:
        sys.settrace(opcode_tracer(counts))
    try:
        for batch in batches[WARMUP:]:
            step(batch)
    finally:
        sys.settrace(None)
    steps = len(batches) - WARMUP
    return ((time.perf_counter() - start) / steps, (rpc.sent_bytes - sent) / steps,
            (rpc.received_bytes - received) / steps,
            (sum(rpc.calls.values()) - calls) / steps)


def role(args):
    """A server or a trainer of the job (the environment says which)."""
    main, startup, feeds, loss = programs()
    exe = fluid.Executor(fluid.CPUPlace())
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = args.mode == "sync"
    t = fluid.DistributeTranspiler(config=config)
    trainer = int(os.getenv("PADDLE_TRAINER_ID", "0"))
    parts = int(os.environ["PADDLE_TRAINERS_NUM"])
    t.transpile(trainer, program=main, pservers=os.environ["PADDLE_PSERVERS_IP_PORT_LIST"],
                trainers=parts, sync_mode=config.sync_mode, startup_program=startup)
    if os.environ["PADDLE_TRAINING_ROLE"] == "PSERVER":
        endpoint = os.environ["PADDLE_CURRENT_ENDPOINT"]
        server = t.get_pserver_program(endpoint)
        exe.run(t.get_startup_program(endpoint, server))
        counts = {}
        if args.bytecodes:  # the threads gRPC starts for the calls, from their start
            threading.settrace(opcode_tracer(counts))
        exe.run(server)
        threading.settrace(None)
        if args.bytecodes:
            print(f"SERVER-BYTECODES {sum(counts.values()) / (args.steps + WARMUP):.0f}",
                  flush=True)
        return
    program = t.get_trainer_program()
    exe.run(startup)
    batches, _ = data(BATCH, args.steps + WARMUP)
    counts = {} if args.bytecodes else None
    seconds, sent, received, calls = train(exe, program, feeds, loss, batches, trainer, parts,
                                           counts)
    exe.close()
    print("RESULT " + json.dumps({"seconds": seconds, "sent": sent, "received": received,
                                  "calls": calls, "bytecodes": sum((counts or {}).values())
                                  / args.steps}), flush=True)


def job(servers, trainers, mode, steps, bytecodes=False):
    """The trainers' RESULT records (with ``bytecodes``, the servers' counts in
    ``job.server_bytecodes``)."""
    processes, _ = launch.plan(servers, trainers)
    out = io.StringIO()
    code = launch.run(processes, os.path.abspath(__file__),
                      ["--mode", mode, "--steps", str(steps)]
                      + (["--bytecodes"] if bytecodes else []), out=out)
    if code:
        raise SystemExit(f"{servers} servers x {trainers} trainers ({mode}) failed:\n"
                         + out.getvalue())
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in out.getvalue().splitlines()
               if "RESULT " in line]
    assert len(results) == trainers, out.getvalue()
    job.server_bytecodes = [float(line.split("SERVER-BYTECODES ", 1)[1])
                            for line in out.getvalue().splitlines()
                            if "SERVER-BYTECODES " in line]
    return results


def single(steps, counts=None):
    main, startup, feeds, loss = programs()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        batches, _ = data(BATCH, steps + WARMUP)
        return train(exe, main, feeds, loss, batches, 0, 1, counts)[0]


def bytecodes(steps):
    """Bytecodes per sync 1 x 1 step: trainer, server, and single-process training."""
    result, = job(1, 1, "sync", steps, bytecodes=True)
    server, = job.server_bytecodes
    counts = {}
    single(steps, counts)
    print(f"sync 1 x 1, bytecodes per step: trainer {result['bytecodes']:,.0f}, server "
          f"{server:,.0f} (its threads, gRPC's included); single process "
          f"{sum(counts.values()) / steps:,.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each configuration, in turns; the fastest is kept")
    parser.add_argument("--mode", choices=["sync", "async"], default="sync")
    parser.add_argument("--bytecodes", action="store_true",
                        help="count the Python bytecodes of a sync 1 x 1 step instead")
    args = parser.parse_args()
    if os.getenv("PADDLE_TRAINING_ROLE"):
        return role(args)
    if args.bytecodes:
        return bytecodes(args.steps)
    configs = [(mode, servers, trainers) for mode in ("sync", "async")
               for servers, trainers in ((1, 1), (2, 1), (1, 2), (2, 2))]
    reference, best = float("inf"), {}
    for turn in range(args.rounds):
        reference = min(reference, single(args.steps))
        for mode, servers, trainers in configs[turn:] + configs[:turn]:
            results = job(servers, trainers, mode, args.steps)
            per_trainer = [1 / r["seconds"] for r in results]
            # a job step is a whole batch: a sync round, or trainers-many async steps
            rate = min(per_trainer) if mode == "sync" else sum(per_trainer) / trainers
            sent = np.mean([r["sent"] for r in results]) / 1e3
            received = np.mean([r["received"] for r in results]) / 1e3
            calls = np.mean([r["calls"] for r in results])
            key = (mode, servers, trainers)
            if key not in best or rate > best[key][0]:
                best[key] = (rate, sent, received, calls)
    print(f"single process: {1 / reference:.0f} steps/s ({reference * 1e3:.2f} ms/step), "
          f"batch {BATCH}, best of {args.rounds}")
    print("mode   servers x trainers   steps/s (job)   vs single   KB sent / received per "
          "trainer step   calls per trainer step")
    for key in configs:
        rate, sent, received, calls = best[key]
        mode, servers, trainers = key
        print(f"{mode:6} {servers} x {trainers}                {rate:8.0f}"
              f"        {rate * reference:5.2f}x     {sent:7.1f} / {received:7.1f}"
              f"                  {calls:5.1f}")


if __name__ == "__main__":
    main()
