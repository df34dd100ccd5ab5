"""Programs built by hand with the RPC ops (no transpiler), and the processes that run them.

Parameter ``w{k}`` ([3, 2], starting at 1) lives on server ``k``; trainer ``t`` sends the
constant gradient ``(t + 1) * (k + 1)`` for it every step. The server's optimize block is
``sgd`` with learning rate 0.1 (after ``sum`` and ``scale(1 / trainers)`` of the trainers'
gradients in sync mode), so after ``n`` steps

- sync:  w{k} = 1 - n * 0.1 * (k + 1) * mean(t + 1 for each trainer t)
- async: w{k} = 1 - n * 0.1 * (k + 1) * sum(t + 1 for each trainer t)

Run as a script::

    python runtime_programs.py pserver ENDPOINTS INDEX TRAINERS MODE
    python runtime_programs.py trainer ENDPOINTS TRAINER_ID TRAINERS MODE STEPS [--hang-after N]
                                      [--pause SECONDS]
"""
import argparse
import json
import sys
import time

import numpy as np

import fluid_nb as fluid

SHAPE = [3, 2]
LR = 0.1


def grad_name(k, trainer, trainers, mode):
    return f"w{k}@GRAD" + (f".trainer_{trainer}" if mode == 0 and trainers > 1 else "")


def pserver_programs(endpoints, index, trainers, mode):
    """(main, startup) of server ``index``: ``listen_and_serv`` and its optimize block."""
    main, startup = fluid.Program(), fluid.Program()
    block = main.global_block()
    w = block.create_var(name=f"w{index}", shape=SHAPE, dtype="float32", persistable=True)
    lr = block.create_var(name="lr", shape=[1], dtype="float32", persistable=True)
    senders = range(trainers) if mode == 0 else [0]
    grads = [block.create_var(name=grad_name(index, t, trainers, mode), shape=SHAPE,
                              dtype="float32") for t in senders]
    merged = grads[0]
    optimize = main._create_block(0)
    if len(grads) > 1:
        merged = block.create_var(name=f"w{index}@GRAD", shape=SHAPE, dtype="float32")
        optimize.append_op(type="sum", inputs={"X": grads}, outputs={"Out": [merged]})
        optimize.append_op(type="scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                           attrs={"scale": 1.0 / trainers})
    optimize.append_op(type="sgd", inputs={"Param": [w], "Grad": [merged], "LearningRate": [lr]},
                       outputs={"ParamOut": [w]})
    main._rollback()
    block.append_op(type="listen_and_serv", inputs={"X": grads}, outputs={},
                    attrs={"endpoint": endpoints[index], "Fanin": trainers,
                           "optimize_blocks": [optimize.idx], "distributed_mode": mode,
                           "pserver_id": index,
                           "grad_to_block_id": [f"{merged.name}:{optimize.idx}"]})
    init = startup.global_block()
    for name, shape, value in ((w.name, SHAPE, 1.0), ("lr", [1], LR)):
        var = init.create_var(name=name, shape=shape, dtype="float32", persistable=True)
        init.append_op(type="fill_constant", outputs={"Out": [var]},
                       attrs={"shape": shape, "dtype": int(var.dtype), "value": value})
    return main, startup


def trainer_programs(endpoints, trainer, trainers, mode):
    """(main, startup): main sends this step's gradients, then gets the parameters; the
    startup gets the servers' initial parameters."""
    main, startup = fluid.Program(), fluid.Program()
    block = main.global_block()
    params = [block.create_var(name=f"w{k}", shape=SHAPE, dtype="float32", persistable=True)
              for k in range(len(endpoints))]
    grads = [block.create_var(name=grad_name(k, trainer, trainers, mode), shape=SHAPE,
                              dtype="float32") for k in range(len(endpoints))]
    for k, grad in enumerate(grads):
        block.append_op(type="fill_constant", outputs={"Out": [grad]},
                        attrs={"shape": SHAPE, "dtype": int(grad.dtype),
                               "value": float((trainer + 1) * (k + 1))})
    block.append_op(type="send", inputs={"X": grads}, outputs={"Out": []},
                    attrs={"epmap": endpoints, "trainer_id": trainer})
    if mode == 0:
        block.append_op(type="send_barrier", inputs={"X": []}, outputs={"Out": []},
                        attrs={"endpoints": endpoints, "trainer_id": trainer})
    block.append_op(type="recv", inputs={"X": []}, outputs={"Out": params},
                    attrs={"epmap": endpoints, "trainer_id": trainer})
    if mode == 0:
        block.append_op(type="fetch_barrier", inputs={"X": []}, outputs={"Out": params},
                        attrs={"endpoints": endpoints, "trainer_id": trainer})
    init = startup.global_block()
    copies = [init.create_var(name=p.name, shape=SHAPE, dtype="float32", persistable=True)
              for p in params]
    init.append_op(type="recv", inputs={"X": []}, outputs={"Out": copies},
                   attrs={"epmap": endpoints, "trainer_id": trainer})
    if mode == 0:
        init.append_op(type="fetch_barrier", inputs={"X": []}, outputs={"Out": []},
                       attrs={"endpoints": endpoints, "trainer_id": trainer})
    return main, startup


def hang_program(endpoints, trainer, trainers):
    """Half a sync step: the gradients go out, the barrier never does."""
    main, _ = trainer_programs(endpoints, trainer, trainers, 0)
    block = main.global_block()
    for index in reversed(range(len(block.ops))):
        if block.ops[index].type != "send" and block.ops[index].type != "fill_constant":
            block._remove_op(index)
    return main


def expected_params(servers, trainers, mode, steps):
    grads = [t + 1 for t in range(trainers)]
    total = np.mean(grads) if mode == 0 else np.sum(grads)
    return [np.full(SHAPE, 1 - steps * LR * (k + 1) * total, dtype="float32")
            for k in range(servers)]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["pserver", "trainer"])
    parser.add_argument("endpoints")
    parser.add_argument("index", type=int)
    parser.add_argument("trainers", type=int)
    parser.add_argument("mode", type=int)
    parser.add_argument("steps", type=int, nargs="?", default=0)
    parser.add_argument("--hang-after", type=int, default=-1)
    parser.add_argument("--pause", type=float, default=0.0)
    args = parser.parse_args(argv)
    endpoints = args.endpoints.split(",")
    exe = fluid.Executor(fluid.CPUPlace())
    if args.role == "pserver":
        main_program, startup = pserver_programs(endpoints, args.index, args.trainers,
                                                 args.mode)
        exe.run(startup)
        print("serving", endpoints[args.index], flush=True)
        exe.run(main_program)
        value = fluid.global_scope().find_var(f"w{args.index}").get_tensor().numpy()
        print("final", json.dumps(value.ravel().tolist()), flush=True)
        return
    main_program, startup = trainer_programs(endpoints, args.index, args.trainers, args.mode)
    exe.run(startup)
    names = [f"w{k}" for k in range(len(endpoints))]
    values = []
    for step in range(args.steps):
        if step == args.hang_after:
            exe.run(hang_program(endpoints, args.index, args.trainers))
            print("hanging", flush=True)
            time.sleep(3600)
        values = exe.run(main_program, fetch_list=names)
        print("step", step, flush=True)
        time.sleep(args.pause)
    exe.close()
    print("final", json.dumps([np.asarray(v).ravel().tolist() for v in values]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
