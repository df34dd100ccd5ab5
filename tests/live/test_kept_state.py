"""What a live op reads of its block, program, name generator, session, runner and the
modules' globals, the C paths keep while the dicts holding it are unchanged (a dict's
version tag). Any change between two ops is the next op's: made by a plain attribute store
in a hot loop (the interpreter's specialised store writes the dict directly), by a guard,
or by a module global's assignment. Each loop runs long enough for the stores to be
specialised, and checks every op."""
import numpy as np

import fluid_nb as fluid
from fluid_nb.framework import unique_name
from fluid_nb.live import live

ROUNDS = 120


def _chain():
    """``c`` (ones) and ``one`` (halves), 2x2, and ``c + one`` once (its first-run plan)"""
    c = fluid.layers.fill_constant([2, 2], "float32", 1.0)
    one = fluid.layers.fill_constant([2, 2], "float32", 0.5)
    return c + one, one


def _ran(s, var):
    return s.scope.find_var(var.name) is not None


def test_record_only_set_and_cleared_between_ops(session_name):
    with live(session_name) as s:
        c, one = _chain()
        for i in range(ROUNDS):
            s.record_only = i % 3 == 1
            out = fluid.layers.elementwise_add(c, one)
            assert _ran(s, out) == (i % 3 != 1), i
            assert (s.pending[-1:] == [s.program.global_block().ops[-1]]) == (i % 3 == 1), i
        s.record_only = False
        last = c + one
        assert not s.pending
        np.testing.assert_array_equal(last.numpy(), np.full((2, 2), 2.0, "float32"))


def test_an_op_role_guard_between_ops_stamps_the_next_op(session_name):
    with live(session_name) as s:
        c, one = _chain()
        block = s.program.global_block()
        for i in range(ROUNDS):
            if i % 2:
                with s.program.op_role_guard(2):  # an optimizer update: recorded, not run
                    out = c + one
                assert block.ops[-1].attr("op_role") == 2 and not _ran(s, out), i
            else:
                out = c + one
                assert block.ops[-1].attrs.get("op_role", 0) == 0 and _ran(s, out), i


def test_a_name_scope_between_ops_annotates_the_next_op(session_name):
    with live(session_name) as s:
        c, one = _chain()
        block = s.program.global_block()
        for i in range(ROUNDS):
            if i % 2:
                with fluid.name_scope("inner"):
                    c + one
                assert block.ops[-1].attrs["op_namescope"].startswith("/inner"), i
            else:
                c + one
                assert "op_namescope" not in block.ops[-1].attrs, i


def test_a_unique_name_guard_between_ops_names_the_next_temporary(session_name):
    with live(session_name) as s:
        c, one = _chain()
        outside = [(c + one).name for _ in range(3)]
        guards = []  # (each guard's generator held: a stale read would find it alive)
        for i in range(ROUNDS // 4):
            guards.append(unique_name.UniqueNameGenerator(f"g{i}_"))
            with unique_name.guard(guards[-1]):
                inside = [fluid.layers.elementwise_add(c, one).name for _ in range(2)]
            # (the layer's name and its temporary's each take the prefix, as Paddle's do)
            assert inside == [f"g{i}_g{i}_elementwise_add_{k}.tmp_0" for k in range(2)]
            outside.append((c + one).name)
        numbers = [int(name.split("_")[-1]) for name in outside]
        assert numbers == list(range(numbers[0], numbers[0] + len(outside)))


def test_the_program_version_changed_between_ops_is_advanced_from(session_name):
    with live(session_name) as s:
        c, one = _chain()
        program = s.program
        for i in range(ROUNDS):
            before = program._version
            if i % 3 == 0:
                program._version = before + 100  # another writer between two ops
                before += 100
            c + one
            assert program._version == before + 2, i


def test_a_block_s_ops_and_vars_replaced_between_ops_take_the_next_op(session_name):
    with live(session_name) as s:
        c, one = _chain()
        block = s.program.global_block()
        replaced = []  # (the old ones held: a stale read would find them alive)
        for i in range(ROUNDS):
            if i % 4 == 0:
                replaced.append(block.ops)
                block.ops = list(block.ops)
            if i % 4 == 2:
                replaced.append(block.vars)
                block.vars = dict(block.vars)
            out = c + one
            assert block.ops[-1].output("Out") == [out.name] and block.vars[out.name] is out, i
            assert _ran(s, out), i


def test_the_session_s_and_runner_s_records_replaced_between_ops(session_name):
    """The count, the last run's times and the ops since the last look land in the dicts
    and lists the session and runner hold at that op."""
    with live(session_name) as s:
        c, one = _chain()
        replaced = []  # (the old ones held: a stale read would find them alive)
        for i in range(ROUNDS):
            if i % 5 == 0:
                replaced += [s.stats, s.runner.last_run, s._since_sweep]
                s.stats = dict(s.stats)
                s.runner.last_run = dict(s.runner.last_run)
                s._since_sweep = list(s._since_sweep)
            counted = s.stats["ops_run"]
            c + one
            op = s.program.global_block().ops[-1]
            assert s.stats["ops_run"] == counted + 1, i
            assert op in s.runner.last_run and s._since_sweep[-1] is op, i


def test_a_transaction_opened_between_ops_takes_its_ops_back(session_name):
    """An fc that fails (a transaction around its ops) between two ops: its ops and names
    are taken back, and the next op appends and runs as before."""
    with live(session_name) as s:
        c, one = _chain()
        block = s.program.global_block()
        for i in range(ROUNDS // 4):
            ops = len(block.ops)
            try:
                fluid.layers.fc(c, size=3, act="no such activation")
            except Exception:
                pass
            assert len(block.ops) == ops, i
            out = c + one
            assert _ran(s, out) and block.ops[-1].output("Out") == [out.name], i


def test_the_runner_s_plans_replaced_between_ops_are_the_next_op_s(session_name):
    """The runner's first-run plans replaced by an empty dict between two ops (the old ones
    still held): the next op goes the Python way, which works its type's plan out again
    into the new dict."""
    with live(session_name) as s:
        c, one = _chain()
        replaced = []
        for i in range(ROUNDS):
            if i % 3 == 0:
                replaced.append(s.runner._first_plans)
                s.runner._first_plans = {}
            out = c + one
            assert "elementwise_add" in s.runner._first_plans and _ran(s, out), i
