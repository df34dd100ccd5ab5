"""Executor semantics: feed/fetch ops, scopes, prepared plans, typed errors."""
import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, NotFound, PreconditionNotMet
from fluid_nb.exec import executor as executor_module


def _add_program():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3), dtype="float32", need_check_feed=True)
    block.create_var(name="y", shape=(3,), dtype="float32", persistable=True)
    block.append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"}, outputs={"Out": "z"})
    return program


def _scope_with_y():
    scope = fluid.Scope()
    scope.var("y").get_tensor().set(np.array([1, 2, 3], "float32"), fluid.CPUPlace())
    return scope


def test_run_feeds_and_fetches_by_name_and_by_variable():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    x = np.ones((2, 3), "float32")
    by_name = exe.run(program, feed={"x": x}, fetch_list=["z"], scope=scope)[0]
    by_var = exe.run(program, feed={"x": x}, fetch_list=[program.global_block().var("z")],
                     scope=scope)[0]
    np.testing.assert_array_equal(by_name, x + [1, 2, 3])
    np.testing.assert_array_equal(by_var, by_name)


def test_feed_and_fetch_go_through_feed_and_fetch_ops():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"], scope=scope)
    plan = next(iter(program._plans.values()))[1]()
    types = [p.op.type for p in plan.prepared.ops]
    assert types == ["feed", "elementwise_add", "fetch"]
    assert program.global_block().ops[0].type == "elementwise_add"  # the user's program untouched


def test_return_numpy_false_gives_lod_tensors_with_lod():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    x = fluid.create_lod_tensor(np.ones((5, 3), "float32"), [[2, 3]], fluid.CPUPlace())
    (z,) = exe.run(program, feed={"x": x}, fetch_list=["z"], scope=scope, return_numpy=False)
    assert isinstance(z, fluid.LoDTensor)
    assert z.lod() == [[0, 2, 5]] and z.recursive_sequence_lengths() == [[2, 3]]


def test_temporaries_are_dropped_and_persistables_stay():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"], scope=scope)
    assert scope.find_var("z") is None
    assert scope.find_var("y").is_initialized()
    assert scope.kids == []


def test_second_run_reuses_the_plan_and_a_change_replans():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones((1, 3), "float32")}
    exe.run(program, feed=feed, fetch_list=["z"], scope=scope)
    built = executor_module.stats["plans_built"]
    for _ in range(3):
        exe.run(program, feed=feed, fetch_list=["z"], scope=scope)
    assert executor_module.stats["plans_built"] == built
    program.global_block().append_op(type="elementwise_add", inputs={"X": "z", "Y": "y"},
                                     outputs={"Out": "w"})
    (w,) = exe.run(program, feed=feed, fetch_list=["w"], scope=scope)
    assert executor_module.stats["plans_built"] == built + 1
    np.testing.assert_array_equal(w, [[3, 5, 7]])


def test_a_dropped_scope_takes_its_plan_and_values_with_it():
    # the plan of a run belongs to the scope it is bound to: the program keeps no scope
    program = _add_program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = _scope_with_y()
    feed = {"x": np.ones((1, 3), "float32")}
    exe.run(program, feed=feed, fetch_list=["z"], scope=scope)
    (plan,) = scope.plans.values()
    fed = scope.find_var("feed").value[0].array  # the feed list keeps what the run was fed
    gone = [weakref.ref(scope), weakref.ref(plan), weakref.ref(fed)]
    del scope, plan, fed, feed
    gc.collect()  # a plan and its scope refer to each other
    assert all(ref() is None for ref in gone)
    (entry,) = program._plans.values()
    assert entry[1]() is None  # the program's weak reference to the plan is dead too


def test_a_scope_keeps_the_plans_of_its_last_runs():
    scope = _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    programs = [_add_program() for _ in range(executor_module.SCOPE_PLANS + 1)]
    feed = {"x": np.ones((1, 3), "float32")}
    for program in programs[:-1]:
        exe.run(program, feed=feed, fetch_list=["z"], scope=scope)
    built = executor_module.stats["plans_built"]
    for program in programs[:-1]:  # each found again
        exe.run(program, feed=feed, fetch_list=["z"], scope=scope)
    assert executor_module.stats["plans_built"] == built
    exe.run(programs[-1], feed=feed, fetch_list=["z"], scope=scope)  # one past: a fresh set
    assert len(scope.plans) == 1
    (z,) = exe.run(programs[0], feed=feed, fetch_list=["z"], scope=scope)
    assert executor_module.stats["plans_built"] == built + 2  # the new one, the rebuilt one
    np.testing.assert_array_equal(z, [[2, 3, 4]])


def test_a_run_binds_to_a_loops_kept_step_scope_too():
    from fluid_nb.exec.scope import KeptScope
    step = KeptScope(_scope_with_y(), {"kept": np.zeros(1, "float32")})
    (z,) = fluid.Executor(fluid.CPUPlace()).run(
        _add_program(), feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"], scope=step)
    np.testing.assert_array_equal(z, [[2, 3, 4]])  # y found in the step's parent
    assert len(step.plans) == 1


def test_feed_of_wrong_shape_names_the_variable():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match=r"feed 'x': shape expected \[-1, 3\].*\[2, 4\]"):
        exe.run(program, feed={"x": np.ones((2, 4), "float32")}, fetch_list=["z"], scope=scope)


def test_feed_of_lossy_dtype_is_refused_and_lossless_is_cast():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="label", shape=(-1, 1), dtype="int64", need_check_feed=True)
    block.append_op(type="elementwise_add", inputs={"X": "label", "Y": "label"},
                    outputs={"Out": "twice"})
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match=r"feed 'label': dtype expected int64.*float"):
        exe.run(program, feed={"label": np.ones((2, 1), "float32")}, fetch_list=["twice"],
                scope=fluid.Scope())
    (out,) = exe.run(program, feed={"label": np.ones((2, 1), "int32")}, fetch_list=["twice"],
                     scope=fluid.Scope())
    assert out.dtype == np.int64


def test_fetch_of_unknown_variable_is_not_found():
    program, scope = _add_program(), _scope_with_y()
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(NotFound, match="fetch 'nothing'"):
        exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["nothing"],
                scope=scope)


def test_uninitialised_input_names_the_op():
    program = _add_program()
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(PreconditionNotMet, match=r"op 'elementwise_add'"):
        exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"],
                scope=fluid.Scope())


def test_kernel_failure_names_op_and_inputs():
    program, scope = _add_program(), fluid.Scope()
    scope.var("y").get_tensor().set(np.ones(4, "float32"))  # wrong size at run time
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match=r"op 'elementwise_add'.*X=\['x'\], Y=\['y'\]"):
        exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"], scope=scope)


def test_a_failure_names_the_index_of_the_op_that_failed_traced_or_not():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=[-1, 3], dtype="float32")
    block.create_var(name="y", shape=[3], dtype="float32", persistable=True)
    prev = "x"
    for k in range(3):  # ops before the failing one, so its index is not 0 (feed is op 0)
        block.create_var(name=f"s{k}", shape=[-1, 3], dtype="float32")
        block.append_op("scale", {"X": [prev]}, {"Out": [f"s{k}"]}, {"scale": 2.0})
        prev = f"s{k}"
    block.create_var(name="z", shape=[-1, 3], dtype="float32")
    block.append_op("elementwise_add", {"X": [prev], "Y": ["y"]}, {"Out": ["z"]})
    scope = fluid.Scope()
    scope.var("y").get_tensor().set(np.ones(4, "float32"))  # wrong size at run time
    exe = fluid.Executor(fluid.CPUPlace())
    for trace in (None, []):
        exe.trace = trace
        with pytest.raises(InvalidArgument, match=r"op 'elementwise_add' \(block 0, op 4\)"):
            exe.run(program, feed={"x": np.ones((1, 3), "float32")}, fetch_list=["z"],
                    scope=scope)
    assert [op.type for op, _ in trace] == ["feed", "scale", "scale", "scale"]


def test_scope_guard_switches_global_scope():
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        assert fluid.global_scope() is scope
    assert fluid.global_scope() is not scope


def test_scope_tree_lookup_climbs_to_parents():
    root = fluid.Scope()
    root.var("a")
    kid = root.new_scope()
    assert kid.find_var("a") is root.find_var("a")
    assert kid.find_local_var("a") is None
    root.drop_kids()
    assert root.kids == []


def test_import_does_not_import_cupy():
    code = "import sys, fluid_nb; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ragged_feed_and_uninitialised_tensor_are_invalid_arguments():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match="feed 'x': value expected a rectangular array"):
        exe.run(main, feed={"x": [[1, 2], [3]]}, fetch_list=[x], scope=fluid.Scope())
    with pytest.raises(InvalidArgument, match="feed 'x': value expected an initialised tensor"):
        exe.run(main, feed={"x": fluid.LoDTensor()}, fetch_list=[x], scope=fluid.Scope())


def test_run_refuses_a_scope_that_is_not_a_scope():
    main = fluid.Program()
    with pytest.raises(InvalidArgument, match="Executor.run: scope expected a Scope"):
        fluid.Executor(fluid.CPUPlace()).run(main, scope=123)
