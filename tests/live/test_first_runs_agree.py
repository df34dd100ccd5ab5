"""Every op table case appended as a live op gives the executor's values, at once and
when its inputs are fed again; so do the grad ops of the cases whose gradients are
checked.

The op families' tables (each tests/ops module's CASES) are the cases: each is appended,
with its inputs fed, to a live session's program, whose hook runs it at once, its first
run in the one C call (``steps.first_run``) where that call takes it; the values it leaves
in the session's scope agree with the executor's run of the case's one-op program as
tests/targets/agreement.py says (dtype, shape, LoD, NaN and inf, finite values to the
type's tolerance). Ops that draw random numbers (the ``stateful`` trait) are left out: a
live op and a run draw apart."""
import warnings

import numpy as np

import fluid_nb as fluid
from fluid_nb.exec.steps import first_run
from fluid_nb.live import live, runner
from fluid_nb.ops import registry
from tests.ops.op_test import all_table_cases
from tests.targets.agreement import assert_agree
from tests.targets.targets import _interpreted, forward_program, gradient_program

CASES = [case for case in all_table_cases() if "stateful" not in registry.get(case.op).traits]


def _live_values(program, feed, fetch, name):
    """The ops of ``program`` appended to a live session's program, its inputs fed first:
    the values ``fetch`` hold in the session's scope after the ops' first runs, and after
    the inputs are fed again (each op runs again through the step the runner binds)."""
    with live(name) as session:
        session.program.version = program.version  # (0-D scalars, as the case's program)
        block = session.program.global_block()
        for var_name, var in program.global_block().vars.items():
            block.create_var(name=var_name, shape=var.shape, dtype=var.dtype,
                             lod_level=var.lod_level, type=var.type)
        for var_name, value in feed.items():
            fluid.feed(var_name, value)
        for op in program.global_block().ops:
            block.append_op(type=op.type, inputs={k: list(v) for k, v in op.inputs.items()},
                            outputs={k: list(v) for k, v in op.outputs.items()},
                            attrs=dict(op.attrs))
        first = [session.scope.find_var(var_name).value for var_name in fetch]
        for var_name, value in feed.items():
            fluid.feed(var_name, value)
        return first, [session.scope.find_var(var_name).value for var_name in fetch]


def _agreeing(cases, make, session_name, monkeypatch):
    """Each case's program (``make``: forward_program or gradient_program) run live, as
    :func:`_live_values` runs it, against the executor: the disagreements (none expected)
    and how many cases had a first run in the C call."""
    taken = []  # per first run asked: whether the C call took it

    def counted(*args):
        took = first_run(*args)
        taken.append(took is not None)
        return took
    monkeypatch.setattr(runner, "first_run", counted)
    disagreeing, in_c = [], 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # (edge values warn in NumPy, as they are meant to)
        for index, case in enumerate(cases):
            program, feed, fetch = make(case)
            want = _interpreted(program, feed, fetch)
            taken_before = len(taken)
            try:
                first, again = _live_values(program, feed, fetch, f"{session_name}_{index}")
                for var_name, expected, value, rerun in zip(fetch, want, first, again):
                    assert_agree(f"{case.id} {var_name}", expected, value)
                    assert_agree(f"{case.id} {var_name}, run again", expected, rerun)
            except Exception as exc:  # (noted with the case, all reported at the end)
                disagreeing.append(f"{case.id}: {type(exc).__name__}: {exc}"[:300])
            in_c += any(taken[taken_before:])
    return disagreeing, in_c


def test_every_table_case_run_live_gives_the_executors_values(session_name, monkeypatch):
    """Each case's first run (in the C call for at least nine in ten) and its run again
    after its inputs are fed again."""
    disagreeing, in_c = _agreeing(CASES, forward_program, session_name, monkeypatch)
    assert not disagreeing, f"{len(disagreeing)} of {len(CASES)}:\n" + "\n".join(disagreeing)
    total = len(CASES)
    assert total > 900 and in_c >= 0.9 * total, (in_c, total)


def test_every_gradient_checked_case_run_live_gives_the_executors_gradients(session_name,
                                                                             monkeypatch):
    """A case's op with its grad ops and their loss weights (the program the targets check
    backward), run live as ``minimize`` in a live session runs them: the gradients of
    every input the case checks (at least nine cases in ten with a first run in the C
    call)."""
    cases = [case for case in CASES if case.grad]
    disagreeing, in_c = _agreeing(cases, gradient_program, session_name, monkeypatch)
    assert not disagreeing, f"{len(disagreeing)} of {len(cases)}:\n" + "\n".join(disagreeing)
    total = len(cases)
    assert total > 300 and in_c >= 0.9 * total, (in_c, total)
