"""fluid.save / fluid.load and program states in Fluid 1.8's files: ``.pdparams`` (the
parameters) and ``.pdopt`` (the other persistables), each a protocol-2 pickle of
``{name: ndarray}``, and ``.pdmodel`` (the program's bytes); the files of save_params /
save_persistables / save_vars read back through the same calls; loads that fail leave
the scope as it was; pickles that name anything but NumPy arrays are refused unrun."""
import io
import os
import pickle
import pickletools
import struct
import warnings

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType, NotFound, PreconditionNotMet
from fluid_nb.proto import framework_pb2 as pb


def _trained():
    """A regression trained one step with Adam: parameters, moments, beta powers and a
    learning rate in the scope. ``(main, startup, scope, exe)``."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            input=fluid.layers.fc(input=x, size=1), label=y))
        fluid.optimizer.Adam(learning_rate=0.1).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    exe.run(main, feed={"x": rng.rand(4, 3).astype("float32"),
                        "y": rng.rand(4, 1).astype("float32")}, fetch_list=[loss], scope=scope)
    return main, startup, scope, exe


def _values(program, scope):
    return {v.name: np.array(scope.find_var(v.name).value) for v in program.list_vars()
            if fluid.io.is_persistable(v)}


def _same(values, before):
    """Every value as before (a 0-D learning rate comes back from a LoDTensor file as
    shape [1], the shape Fluid 1.x gives it)."""
    return all(np.array_equal(np.ravel(v), np.ravel(before[k])) for k, v in values.items())


def _zero(program, scope):
    for v in program.list_vars():
        if fluid.io.is_persistable(v):
            t = scope.find_var(v.name).get_tensor()
            t.set(np.zeros_like(np.array(t)), fluid.CPUPlace())


def test_save_writes_params_optimizer_state_and_program_as_fluid_1_8(tmp_path):
    main, _, scope, _ = _trained()
    with fluid.scope_guard(scope):
        fluid.save(main, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.pdmodel", "m.pdopt", "m.pdparams"]
    raw = (tmp_path / "m.pdparams").read_bytes()
    assert raw[:2] == b"\x80\x02"  # pickle protocol 2
    params = pickle.loads(raw)
    assert sorted(params) == sorted(p.name for p in main.all_parameters())
    opt = pickle.loads((tmp_path / "m.pdopt").read_bytes())
    assert any("moment1" in n for n in opt) and any("learning_rate" in n for n in opt)
    assert not set(opt) & set(params) and "x" not in opt and "y" not in opt
    values = _values(main, scope)
    for name, array in {**params, **opt}.items():
        assert isinstance(array, np.ndarray)
        np.testing.assert_array_equal(array, values[name])
    desc = pb.ProgramDesc.FromString((tmp_path / "m.pdmodel").read_bytes())
    assert [op.type for op in desc.blocks[0].ops] == [op.type for op in main.global_block().ops]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".tmp")]


@pytest.mark.parametrize("suffix", ["", ".pdparams", ".pdopt", ".pdmodel"])
def test_load_restores_every_persistable_from_any_of_the_three_names(tmp_path, suffix):
    main, _, scope, exe = _trained()
    before = _values(main, scope)
    with fluid.scope_guard(scope):
        fluid.save(main, str(tmp_path / "m"))
        _zero(main, scope)
        fluid.load(main, str(tmp_path / "m") + suffix, exe)
    for name, array in _values(main, scope).items():
        np.testing.assert_array_equal(array, before[name])


def test_load_program_state_merges_both_files_and_set_program_state_applies_it(tmp_path):
    main, _, scope, _ = _trained()
    before = _values(main, scope)
    with fluid.scope_guard(scope):
        fluid.save(main, str(tmp_path / "m"))
    for suffix in ("", ".pdparams", ".pdopt", ".pdmodel"):
        state = fluid.io.load_program_state(str(tmp_path / "m") + suffix)
        assert sorted(state) == sorted(before)
        _zero(main, scope)
        fluid.io.set_program_state(main, state, scope=scope)
        for name, array in _values(main, scope).items():
            np.testing.assert_array_equal(array, before[name])


def test_load_program_state_reads_save_persistables_directories_and_combined_files(tmp_path):
    main, _, scope, exe = _trained()
    before = _values(main, scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path / "dir"), main)
        fluid.io.save_persistables(exe, str(tmp_path / "one"), main, filename="all")
    state = fluid.io.load_program_state(str(tmp_path / "dir"))
    assert sorted(state) == sorted(before)
    persistables = fluid.io.get_program_persistable_vars(main)
    combined = fluid.io.load_program_state(str(tmp_path / "one" / "all"), var_list=persistables)
    for name in before:
        np.testing.assert_array_equal(state[name], before[name])
        np.testing.assert_array_equal(combined[name], before[name])
    with pytest.raises(InvalidArgument):  # a combined file holds no names
        fluid.io.load_program_state(str(tmp_path / "one" / "all"))
    with pytest.raises(InvalidType):
        fluid.io.load_program_state(str(tmp_path / "one" / "all"), var_list=["x"])
    extra = main.global_block().create_var(name="not_saved", shape=[1], persistable=True)
    with pytest.raises(PreconditionNotMet):  # RuntimeError, as Fluid raises
        fluid.io.load_program_state(str(tmp_path / "one" / "all"),
                                    var_list=persistables + [extra])


def test_load_reads_save_persistables_files_and_needs_an_executor_for_them(tmp_path):
    main, _, scope, exe = _trained()
    before = _values(main, scope)
    persistables = fluid.io.get_program_persistable_vars(main)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path / "dir"), main)
        fluid.io.save_persistables(exe, str(tmp_path / "one"), main, filename="all")
        _zero(main, scope)
        fluid.load(main, str(tmp_path / "dir"), exe)
        assert _same(_values(main, scope), before)
        _zero(main, scope)
        fluid.load(main, str(tmp_path / "one" / "all"), exe, persistables)
        assert _same(_values(main, scope), before)
        with pytest.raises(InvalidArgument):  # ValueError: no executor
            fluid.load(main, str(tmp_path / "one" / "all"), None, persistables)
        with pytest.raises(InvalidArgument):  # ValueError: a combined file needs var_list
            fluid.load(main, str(tmp_path / "one" / "all"), exe, None)
        fluid.io.save_params(exe, str(tmp_path / "one"), main, filename="all")
        with pytest.raises(RuntimeError):  # fewer records than variables asked for
            fluid.load(main, str(tmp_path / "one" / "all"), exe, persistables)


def test_a_failed_load_leaves_every_value_as_it_was(tmp_path):
    main, _, scope, exe = _trained()
    with fluid.scope_guard(scope):
        fluid.save(main, str(tmp_path / "m"))
    opt = pickle.loads((tmp_path / "m.pdopt").read_bytes())
    last = sorted(opt)[-1]
    opt[last] = opt[last].astype("float64")  # the last one checked is wrong
    (tmp_path / "m.pdopt").write_bytes(pickle.dumps(opt, protocol=2))
    _zero(main, scope)
    with fluid.scope_guard(scope):
        with pytest.raises(InvalidArgument, match="dtype"):
            fluid.load(main, str(tmp_path / "m"), exe)
    assert all(not np.any(v) for v in _values(main, scope).values())
    os.unlink(tmp_path / "m.pdopt")
    with fluid.scope_guard(scope), pytest.raises(NotFound):
        fluid.load(main, str(tmp_path / "m"), exe)
    assert all(not np.any(v) for v in _values(main, scope).values())


def test_set_program_state_checks_shapes_and_dtypes_before_setting_anything():
    main, _, scope, _ = _trained()
    before = _values(main, scope)
    names = sorted(before)
    bad_shape = {**before, names[-1]: np.zeros((9, 9), "float32")}
    with pytest.raises(InvalidArgument, match="shape"):
        fluid.io.set_program_state(main, {n: v + 1 for n, v in bad_shape.items()}, scope=scope)
    bad_dtype = {n: (v + 1).astype("float64") for n, v in before.items()}
    with pytest.raises(InvalidArgument, match="dtype"):
        fluid.io.set_program_state(main, bad_dtype, scope=scope)
    assert _same(_values(main, scope), before)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fluid.io.set_program_state(main, {"no_such_var": np.zeros(1)}, scope=scope)
    assert any("no_such_var" in str(w.message) for w in caught)
    with pytest.raises(PreconditionNotMet):  # the startup program never ran here
        fluid.io.set_program_state(main, before, scope=fluid.Scope())


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_a_pickle_that_names_anything_but_numpy_arrays_is_refused_unrun(tmp_path):
    main, _, scope, exe = _trained()
    with fluid.scope_guard(scope):
        fluid.save(main, str(tmp_path / "m"))
    params = pickle.loads((tmp_path / "m.pdparams").read_bytes())
    params[sorted(params)[0]] = _Boom()
    (tmp_path / "m.pdparams").write_bytes(pickle.dumps(params, protocol=2))
    assert "system" in str(list(pickletools.genops((tmp_path / "m.pdparams").read_bytes())))
    with pytest.raises(InvalidArgument, match="system"):
        fluid.io.load_program_state(str(tmp_path / "m"))
    (tmp_path / "m.pdparams").write_bytes(b"\x80\x02}q\x00(X")  # cut short
    with pytest.raises(InvalidArgument):
        fluid.io.load_program_state(str(tmp_path / "m"))


class _Python2Pickler(pickle._Pickler):
    """Writes bytes as Python 2 wrote its str: a BINSTRING opcode, no ``_codecs.encode``."""
    dispatch = dict(pickle._Pickler.dispatch)

    def _save_str2(self, obj):
        self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = _save_str2


def test_a_state_written_by_python_2_loads(tmp_path):
    """Fluid 1.8 under Python 2 pickled an array's data as a str; latin-1 reads it back."""
    array = np.arange(6, dtype="float32").reshape(2, 3)
    buf = io.BytesIO()
    _Python2Pickler(buf, protocol=2).dump({"w": array})
    assert b"_codecs" not in buf.getvalue()
    (tmp_path / "m.pdparams").write_bytes(buf.getvalue())
    state = fluid.io.load_program_state(str(tmp_path / "m"))
    np.testing.assert_array_equal(state["w"], array)


def test_the_pdtensors_file_of_earlier_versions_still_loads(tmp_path):
    main, _, scope, exe = _trained()
    before = _values(main, scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), main, filename="m.pdtensors")
        _zero(main, scope)
        fluid.load(main, str(tmp_path / "m"), exe)
    assert _same(_values(main, scope), before)
    state = fluid.io.load_program_state(str(tmp_path / "m"),
                                        var_list=fluid.io.get_program_persistable_vars(main))
    assert sorted(state) == sorted(before)


def test_bad_arguments_get_typed_errors():
    main, _, scope, exe = _trained()
    with pytest.raises(InvalidType):
        fluid.save("program", "m")
    with pytest.raises(InvalidArgument):
        fluid.save(main, "some_dir/")  # no file name
    with pytest.raises(InvalidType):
        fluid.io.load_vars(exe, "./nowhere", main_program="program")
    with pytest.raises(InvalidType):
        fluid.io.load_vars(exe, "./nowhere", main_program="program", vars="vars")
    with pytest.raises(InvalidType):
        fluid.io.save_vars(exe, "./nowhere", main, vars="vars")
    with pytest.raises(PreconditionNotMet):  # saving needs values
        fluid.save(main, "m", scope=fluid.Scope())


def test_io_takes_a_compiled_programs_program_with_a_warning(tmp_path):
    main, _, scope, exe = _trained()
    compiled = fluid.CompiledProgram(main)
    with pytest.warns(UserWarning, match="CompiledProgram"):
        assert fluid.io._get_valid_program(compiled) is main
    with pytest.raises(InvalidType):
        fluid.io._get_valid_program("program")
    x = main.global_block().var("x")
    target = [op for op in main.global_block().ops if op.type == "elementwise_add"][0]
    out = main.global_block().var(target.output("Out")[0])
    with fluid.scope_guard(scope), pytest.warns(UserWarning):
        names = fluid.io.save_inference_model(str(tmp_path), [x.name], [out], exe, compiled)
    assert names == ["save_infer_model/scale_0"]


def test_saved_inference_model_fetches_a_scale_and_leaves_the_program_alone(tmp_path):
    main, _, scope, exe = _trained()
    ops_before = [op.type for op in main.global_block().ops]
    glob = main.global_block()
    pred = glob.var([op for op in glob.ops if op.type == "elementwise_add"][0].output("Out")[0])
    with fluid.scope_guard(scope):
        names = fluid.io.save_inference_model(str(tmp_path / "a"), ["x"], [pred], exe, main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "a"), exe)
        # saving the loaded model again adds no second scale
        again = fluid.io.save_inference_model(str(tmp_path / "b"), feeds, fetches, exe, program)
    assert [op.type for op in main.global_block().ops] == ops_before
    assert names == again == [f.name for f in fetches] == ["save_infer_model/scale_0"]
    ops = [op.type for op in program.global_block().ops]
    assert ops == ["feed", "mul", "elementwise_add", "scale", "fetch"]
    assert not any(v.name.endswith("@GRAD") or "moment" in v.name for v in program.list_vars())


def test_save_inference_model_edge_arguments(tmp_path):
    main, _, scope, exe = _trained()
    glob = main.global_block()
    pred = glob.var([op for op in glob.ops if op.type == "elementwise_add"][0].output("Out")[0])
    with fluid.scope_guard(scope):
        with pytest.raises(InvalidArgument):
            fluid.io.save_inference_model(str(tmp_path), [1], [pred], exe, main)
        with pytest.raises(InvalidArgument):
            fluid.io.save_inference_model(str(tmp_path), ["x"], [], exe, main)
        with pytest.warns(UserWarning, match="program_only"):
            fluid.io.save_inference_model(str(tmp_path / "p"), ["x"], [pred], exe, main,
                                          program_only=True)
        fluid.io.save_inference_model(str(tmp_path / "w"), ["x"], [pred], exe, main,
                                      model_filename="sub/model", params_filename="sub/params",
                                      export_for_deployment=False)
    assert os.listdir(tmp_path / "p") == ["__model__"]
    assert sorted(os.listdir(tmp_path / "w")) == ["model.main_program", "params"]
    whole = pb.ProgramDesc.FromString((tmp_path / "w" / "model.main_program").read_bytes())
    assert len(whole.blocks[0].ops) == len(glob.ops)
