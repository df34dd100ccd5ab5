"""One training script for the three roles of a parameter-server job, as Fluid 1.x
distributed scripts are written: the role comes from the environment ``fluid-nb launch``
(or a cluster's launcher) sets, and without one the script trains on its own.

    PADDLE_TRAINING_ROLE=PSERVER: transpile, run the server's startup, then serve
        (``exe.run(pserver_program)`` returns once every trainer has called exe.close());
    PADDLE_TRAINING_ROLE=TRAINER: transpile, run the startup (it fetches the servers'
        initial parameters), train on this trainer's share of every batch, exe.close();
    unset: train single-process on whole batches.

The held-out loss (a test set's, with the program cloned for test before minimize) is
printed before and after training. Each batch of ``batch_size`` rows is cut into ``trainers`` equal, contiguous parts;
trainer ``t`` trains on part ``t``. In sync mode the servers average the trainers'
gradients, so the parameters follow single-process training on the whole batches.
"""
import argparse
import json
import os

import numpy as np

import fluid_nb as fluid


def arguments(description, optimizer="sgd"):
    """The command line every example takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default=optimizer)
    parser.add_argument("--lr-decay", action="store_true",
                        help="the learning rate times 0.8 every 10 steps (exponential_decay): "
                             "the servers run the schedule")
    parser.add_argument("--async", dest="sync", action="store_false",
                        help="asynchronous updates (default: synchronous rounds)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--save", help="a folder for each process's parameters and losses "
                                       "(.npz: initial and final values, losses)")
    parser.add_argument("--init", help="single-process: start from the 'initial' "
                                       "parameters of this .npz")
    return parser.parse_args()


def make_optimizer(name, learning_rate, decay=False):
    """Fluid's SGD or Adam at ``learning_rate`` (times 0.8 every 10 steps with ``decay``)."""
    if decay:
        learning_rate = fluid.layers.exponential_decay(
            learning_rate=learning_rate, decay_steps=10, decay_rate=0.8, staircase=True)
    if name == "adam":
        return fluid.optimizer.Adam(learning_rate=learning_rate)
    return fluid.optimizer.SGD(learning_rate=learning_rate)


def run(args, network, learning_rate, batches, held_out):
    """Train the network ``network()`` makes (it returns (feed names, loss)) with the
    optimizer ``args`` names on ``batches`` (a list of tuples of arrays, one per feed), in
    the role the environment gives. The loss on ``held_out`` (one such tuple) is measured
    before and after training."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        feeds, loss = network()
        test = main.clone(for_test=True)
        make_optimizer(args.optimizer, learning_rate[args.optimizer],
                       args.lr_decay).minimize(loss)
    evaluate = lambda: float(exe.run(test, feed=dict(zip(feeds, held_out)),  # noqa: E731
                                     fetch_list=[loss])[0])
    params = [p.name for p in main.global_block().all_parameters()]
    role = os.getenv("PADDLE_TRAINING_ROLE")
    exe = fluid.Executor(fluid.CPUPlace())
    if role is None:
        return _train(exe, args, main, startup, feeds, loss, params, batches, evaluate,
                      "local", 0, 1)
    endpoints = os.environ["PADDLE_PSERVERS_IP_PORT_LIST"]
    trainers = int(os.environ["PADDLE_TRAINERS_NUM"])
    trainer_id = int(os.getenv("PADDLE_TRAINER_ID", "0"))
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = args.sync  # the servers' mode, as Fluid 1.8 scripts set it
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, pservers=endpoints, trainers=trainers,
                sync_mode=args.sync, startup_program=startup)
    if role == "PSERVER":
        current = os.environ["PADDLE_CURRENT_ENDPOINT"]
        pserver_program = t.get_pserver_program(current)
        exe.run(t.get_startup_program(current, pserver_program))
        print("serving", current, flush=True)
        exe.run(pserver_program)
        print("all trainers done", flush=True)
        return None
    return _train(exe, args, t.get_trainer_program(), startup, feeds, loss, params, batches,
                  evaluate, f"trainer.{trainer_id}", trainer_id, trainers)


def _values(names):
    scope = fluid.global_scope()
    return {name: np.array(scope.find_var(name).get_tensor()) for name in names}


def _train(exe, args, program, startup, feeds, loss, params, batches, evaluate, label, part,
           parts):
    exe.run(startup)
    if args.init:
        with np.load(args.init) as saved:
            scope = fluid.global_scope()
            for name in params:
                scope.find_var(name).get_tensor().set(saved["initial/" + name],
                                                      fluid.CPUPlace())
    initial = _values(params)
    before = evaluate()
    losses = []
    for step, batch in enumerate(batches[:args.steps]):
        feed = {name: np.array_split(column, parts)[part] for name, column in
                zip(feeds, batch)}
        value, = exe.run(program, feed=feed, fetch_list=[loss])
        losses.append(float(value))
        print(f"step {step} loss {losses[-1]:.6f}", flush=True)
    after = evaluate()
    exe.close()  # a trainer tells its servers it is done
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        arrays = {"initial/" + n: v for n, v in initial.items()}
        arrays.update({"final/" + n: v for n, v in _values(params).items()})
        np.savez(os.path.join(args.save, label + ".npz"), losses=np.array(losses),
                 held_out=np.array([before, after]), **arrays)
    print("held-out loss", json.dumps([before, after]), flush=True)
    return losses
