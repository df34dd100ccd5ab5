"""What the runtime knows about an op: its kernel and its last run time."""
from types import SimpleNamespace

import numpy as np

import fluid_nb as fluid
from fluid_nb.tensor.place import CPUPlace
from fluid_nb.widgets.op_facts import kernel_name, last_run_seconds, op_facts


def _fc_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", [3], dtype="float32")
        fluid.layers.fc(x, 2)
    return main, startup


def test_kernel_is_the_definition_s_cpu_kernel_without_a_session():
    main, _ = _fc_program()
    mul = main.global_block().ops[0]
    facts = op_facts(mul)
    assert facts["kernel"].startswith("ops.math.") and facts["device"] == "cpu"
    assert facts["last_run_ms"] is None


def test_executor_trace_gives_the_last_run_time_of_the_op_it_ran_a_copy_of():
    main, startup = _fc_program()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.trace = []
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    mul, add = main.global_block().ops[:2]
    assert all(traced is not mul for traced, _ in exe.trace)  # Executor.run ran a clone
    assert last_run_seconds(mul, trace=exe.trace) == next(
        s for op, s in exe.trace if op.type == "mul")
    assert last_run_seconds(add, trace=exe.trace) is not None


def test_an_op_run_in_live_mode_shows_the_kernel_its_session_bound_and_its_run_time():
    program, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.live(name="op-facts", program=program,
                                               startup_program=startup) as session:
        x = fluid.layers.data("x", [3], dtype="float32", value=np.ones((2, 3), "float32"))
        fluid.layers.fc(x, 2)
    mul = next(op for op in program.global_block().ops if op.type == "mul")
    facts = op_facts(mul, session)
    assert facts["kernel"] == kernel_name(session.runner.bound_kernel(mul))
    assert facts["kernel"].startswith("ops.math.") and facts["device"] == "cpu"
    assert facts["last_run_ms"] == round(session.runner.last_run[mul] * 1e3, 4) >= 0


def test_live_runner_record_is_used_when_the_runner_keeps_one():
    main, _ = _fc_program()
    mul = main.global_block().ops[0]
    session = SimpleNamespace(place=CPUPlace(), runner=SimpleNamespace(
        bound_kernel=lambda op: None, last_run={mul: 0.002}))
    assert op_facts(mul, session)["last_run_ms"] == 2.0
