"""DistributeTranspiler.transpile checks its arguments before it touches anything, and a
transpile that fails part-way leaves the main and startup programs (and the transpiler) as
they were, with the user's variables still the programs' own."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import FluidError, InvalidArgument, InvalidType, Unavailable
from fluid_nb.framework import unique_name
from fluid_nb.rewriters.transpiler.distribute_transpiler import DistributeTranspiler

from ..errors.corpus import state_of

ENDPOINTS = "127.0.0.1:6170,127.0.0.1:6171"


def trained_programs():
    """(main, startup, loss) of a small regression with SGD, names from a fresh space."""
    main, startup = fluid.Program(), fluid.Program()
    with unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        cost = fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("arguments,error,says", [
    ({"program": "main"}, InvalidType, "program expected a fluid.Program"),
    ({"startup_program": 42}, InvalidType, "startup_program expected a fluid.Program"),
    ({"startup_program": "same"}, InvalidArgument, "a program other than the main program"),
    ({"sync_mode": "yes"}, InvalidType, "sync_mode expected True or False"),
    ({"current_endpoint": "nowhere"}, InvalidArgument, "current_endpoint expected"),
    ({"pservers": ""}, InvalidArgument, "pservers expected comma-separated 'ip:port'"),
    ({"trainers": 0}, InvalidArgument, "trainers expected the number of trainers"),
])
def test_bad_arguments_are_refused_before_anything_changes(arguments, error, says):
    main, startup, _ = trained_programs()
    state = state_of(main, startup)
    before = state()
    arguments = dict({"program": main, "startup_program": startup, "pservers": ENDPOINTS,
                      "trainers": 2}, **arguments)
    if arguments["startup_program"] == "same":
        arguments["startup_program"] = main
    transpiler = DistributeTranspiler()
    with pytest.raises(error) as refused:
        transpiler.transpile(0, **arguments)
    assert says in str(refused.value)
    assert state() == before
    assert transpiler.origin_program is None  # the transpiler can still be used


def test_a_transpile_failing_part_way_puts_the_programs_back(monkeypatch):
    main, startup, loss = trained_programs()
    state = state_of(main, startup)
    before = state()
    original = DistributeTranspiler._append_trainer_startup_ops

    def fails_after_rewriting(self):  # the last step, once the main program is rewritten
        original(self)
        assert any(op.type == "send" for op in main.global_block().ops)
        raise Unavailable("injected: a failure after the rewrite expected nothing")

    monkeypatch.setattr(DistributeTranspiler, "_append_trainer_startup_ops",
                        fails_after_rewriting)
    transpiler = DistributeTranspiler()
    with pytest.raises(FluidError, match="injected"):
        transpiler.transpile(0, program=main, startup_program=startup, pservers=ENDPOINTS,
                             trainers=2)
    assert state() == before
    assert main.global_block().vars[loss.name] is loss  # the user's objects are the program's
    monkeypatch.undo()
    # the same transpiler, and the programs as they were, transpile as fresh ones do
    transpiler.transpile(0, program=main, startup_program=startup, pservers=ENDPOINTS,
                         trainers=2)
    fresh_main, fresh_startup, _ = trained_programs()
    DistributeTranspiler().transpile(0, program=fresh_main, startup_program=fresh_startup,
                                     pservers=ENDPOINTS, trainers=2)
    # (the fresh programs were built from another line: only their ops' stacks differ)
    for program in (main, startup, fresh_main, fresh_startup):
        for block in program.blocks:
            for op in block.ops:
                op.callstack = ()
    assert state() == state_of(fresh_main, fresh_startup)()
