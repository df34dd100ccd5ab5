"""``Block.append_op`` hands an op in its kept form to ``program._append_args``
(``_op_record.append_args``): ``Block._append_args``'s common case in one C call (a
defined op at the block's end, outside a name_scope or device_guard, its attributes
completed from the definition's memo), every other call that method itself before anything
changed. The C call must make the record the method makes (the op, its stack, its role, the
program's version) and take back what the method's except clauses take back."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework import program as fw, unique_name
from tests.core.op_records import record


@pytest.fixture
def python_way(monkeypatch):
    """Every append the method's own way (the module's C call swapped for it)."""
    def use():  # (``skip`` one more: this function is one frame more than the C call)
        monkeypatch.setattr(fw, "_append_args",
                            lambda block, *args: block._append_args(*args[:-1], args[-1] + 1))
    return use


@pytest.fixture
def deferred(monkeypatch):
    """The op types the C call handed to ``Block._append_args``."""
    types = []
    method = fw.Block._append_args

    def counted(self, spec, op_type, *args):
        types.append(op_type)
        return method(self, spec, op_type, *args)
    monkeypatch.setattr(fw.Block, "_append_args", counted)
    return types


def _appends():
    """Raw appends of every form, each twice (the first of a layout fills the memos), the
    refused ones included; the ops' stacks by function, innermost first."""
    main = fluid.Program()
    answers = []
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        block = main.global_block()
        x = block.create_var(name="x", shape=[2, 3], dtype="float32")
        y = block.create_var(name="y", shape=[3, 4], dtype="float32")
        calls = [
            dict(type="mul", inputs={"X": x, "Y": y}, outputs={"Out": "p"}),
            dict(type="scale", inputs={"X": [x]}, outputs={"Out": ["s"]},
                 attrs={"scale": 2.0}),
            dict(type="sum", inputs={"X": [x, x, x]}, outputs={"Out": "t"}),
            dict(type="concat", inputs={"X": [x, x]}, outputs={"Out": "c"}, attrs={"axis": 1}),
            dict(type="fill_constant", outputs={"Out": "f"},
                 attrs={"shape": [2], "dtype": 5, "value": 1.0}),
            dict(type="mul", inputs={"X": y, "Y": y}, outputs={"Out": "bad"}),  # (3 != 4)
            dict(type="sum", inputs={"X": [x, y]}, outputs={"Out": "bad_sum"}),
            dict(type="scale", inputs={"Nope": x}, outputs={"Out": "bad_slot"}),
        ]
        for round_ in range(2):
            for call in calls:
                outputs = {k: (f"{v}_{round_}" if isinstance(v, str) else v)
                           for k, v in call["outputs"].items()}
                try:
                    op = block.append_op(**{**call, "outputs": outputs})
                    answers.append((op.type, [f for _, _, f in fw._callstack.frames(op)][-1]))
                except Exception as error:
                    answers.append((type(error), str(error)))
        with fluid.name_scope("scoped"):
            block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "in_scope"})
        with main.op_role_guard(2):
            block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "in_role"})
            block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "own_role"},
                            attrs={"op_role": 1})
        block._insert_op(0, type="scale", inputs={"X": x}, outputs={"Out": "inserted"})
    # (a name scope's name is the process's next: each build's is its own)
    scoped = next(op for op in block.ops if op.outputs["Out"] == ("in_scope",))
    assert scoped.attrs.pop("op_namescope").startswith("/scoped")
    return record(main), answers, [op.attrs.get("op_role") for op in block.ops]


def test_the_c_call_makes_the_record_the_python_way_makes(python_way):
    c_way = _appends()
    python_way()
    assert c_way == _appends()
    # (the stacks start at the code that asked the block: this file's function)
    assert {frame for kind, frame in c_way[1] if isinstance(kind, str)} == {"_appends"}


def test_calls_the_memos_cannot_answer_go_the_python_way(deferred):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        block = main.global_block()
        # (a shape and attributes no other test gives scale: the memos are the process's)
        x = block.create_var(name="x", shape=[7, 19], dtype="float32")

        def scale(out, **kwargs):
            block.append_op(type="scale", inputs={"X": x}, outputs={"Out": out},
                            attrs={"scale": 1.0 / 19, "bias": 0.0}, **kwargs)
        scale("a")  # (its attributes' completion and its slot layout not yet remembered)
        assert deferred == ["scale"]
        scale("b")
        assert deferred == ["scale"]
        with fluid.name_scope("scoped"):
            scale("c")
        block._insert_op(0, type="scale", inputs={"X": x}, outputs={"Out": "d"},
                         attrs={"scale": 1.0 / 19, "bias": 0.0})
        assert deferred == ["scale"] * 3
        block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "e"},
                        attrs={"scale": 1.0 / 19, "bias": 0.0, "not_an_attr": [object()]})
        assert deferred == ["scale"] * 4
    assert [op.outputs["Out"][0] for op in block.ops] == ["d", "a", "b", "c", "e"]


def test_a_refused_op_leaves_no_output_it_made(python_way):
    def refusals():
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
            block = main.global_block()
            x = block.create_var(name="x", shape=[2, 3], dtype="float32")
            for out in ("ok", "ok2"):  # (the second from the memos)
                block.append_op(type="relu", inputs={"X": x}, outputs={"Out": out})
            before = (dict(block.vars), len(block.ops), main._version)
            with pytest.raises(InvalidArgument, match="mul"):
                block.append_op(type="mul", inputs={"X": x, "Y": x}, outputs={"Out": "bad"})

            def refuse(op):
                raise RuntimeError(f"hook refused {op.type}")
            main._append_hook = refuse
            with pytest.raises(RuntimeError, match="refused relu"):
                block.append_op(type="relu", inputs={"X": x}, outputs={"Out": "hooked"})
            main._append_hook = None
            assert (dict(block.vars), len(block.ops)) == before[:2]
        return record(main)
    c_way = refusals()
    python_way()
    assert c_way == refusals()


def test_an_op_role_guard_stamps_its_role_unless_the_op_names_one():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        block = main.global_block()
        x = block.create_var(name="x", shape=[2, 3], dtype="float32")
        for _ in range(2):  # (the second from the memos)
            with main.op_role_guard(2):
                guarded = block.append_op(type="relu", inputs={"X": x},
                                          outputs={"Out": unique_name.generate("g")})
                named = block.append_op(type="relu", inputs={"X": x},
                                        outputs={"Out": unique_name.generate("n")},
                                        attrs={"op_role": 1})
            plain = block.append_op(type="relu", inputs={"X": x},
                                    outputs={"Out": unique_name.generate("p")})
            assert (guarded.attrs["op_role"], named.attrs["op_role"]) == (2, 1)
            assert "op_role" not in plain.attrs
