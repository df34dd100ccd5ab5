"""An op's given attributes are checked, normalised and completed with its defaults; the
same scalars given again complete to what they did before, each op with dicts of its own."""
import gc
import weakref

import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework.attrs import AttrType
from fluid_nb.ops import registry


def _scale_op(block, name, **attrs):
    return block.append_op(type="scale", inputs={"X": "x"}, outputs={"Out": name},
                           attrs=attrs)


def _block():
    block = fluid.Program().global_block()
    block.create_var(name="x", shape=[2, 3], dtype="float32")
    return block


def test_attributes_given_again_complete_alike_into_dicts_of_each_op():
    block = _block()
    first = _scale_op(block, "a", scale=2, bias=1)
    second = _scale_op(block, "b", scale=2, bias=1)
    assert first.attrs == second.attrs
    assert first.attrs["scale"] == 2.0 and first.attrs["scale"].__class__ is float
    assert first.attrs["bias_after_scale"] is True  # the default, completed
    assert first.attrs is not second.attrs
    first._set_attr("scale", 5.0)
    third = _scale_op(block, "c", scale=2, bias=1)
    assert third.attrs["scale"] == 2.0 and second.attrs["scale"] == 2.0


def test_list_defaults_are_copies_for_every_op():
    spec = registry.find("reshape2")
    list_defaults = [name for name, value in spec._default_attrs.items()
                     if isinstance(value, list)]
    assert list_defaults
    name = list_defaults[0]
    first, _ = spec.complete_attrs({"use_mkldnn": False})
    second, _ = spec.complete_attrs({"use_mkldnn": False})
    first[name].append(7)
    assert second[name] == spec._default_attrs[name]
    assert spec.complete_attrs({"use_mkldnn": False})[0][name] == spec._default_attrs[name]


def test_an_undeclared_attribute_takes_its_type_from_its_value_s_class():
    """1, 1.0 and True are equal dict keys; the types they complete to are not."""
    spec = registry.find("scale")
    kinds = []
    for value in (1, 1.0, True, 1, True):
        attrs, types = spec.complete_attrs({"scale": 2.0, "extra": value})
        kinds.append((attrs["extra"].__class__, types["extra"]))
    assert kinds == [(int, AttrType.INT), (float, AttrType.FLOAT), (bool, AttrType.BOOLEAN),
                     (int, AttrType.INT), (bool, AttrType.BOOLEAN)]
    attrs, types = spec.complete_attrs({"scale": 2.0, "extra": 1})
    types["extra"] = AttrType.LONG  # an op's own dict: the next op's is as it was
    assert spec.complete_attrs({"scale": 2.0, "extra": 1})[1] == {"extra": AttrType.INT}


def test_a_bad_value_is_refused_every_time_it_is_given():
    block = _block()
    _scale_op(block, "a", scale=2.0)
    for name in ("b", "c"):
        with pytest.raises(InvalidArgument, match="attribute 'scale' expected float"):
            _scale_op(block, name, scale="two")
    assert [op.type for op in block.ops] == ["scale"] and "b" not in block.vars


def test_values_that_are_no_scalars_are_completed_afresh_and_not_kept():
    """A block given as an attribute is completed to its index, and nothing keeps the
    block (or its program) alive afterwards."""
    spec = registry.find("while")
    program = fluid.Program()
    sub = program._create_block()
    program._rollback()
    attrs, _ = spec.complete_attrs({"sub_block": sub, "is_test": False})
    assert attrs["sub_block"] == sub.idx
    gone = weakref.ref(program)
    del program, sub
    gc.collect()
    assert gone() is None


def test_a_loop_of_ever_new_values_keeps_a_bounded_memo():
    spec = registry.find("scale")
    for i in range(1000):
        attrs, _ = spec.complete_attrs({"scale": float(i)})
        assert attrs["scale"] == float(i)
    assert len(spec._completed) <= 256


def test_a_list_given_again_completes_alike_and_its_items_classes_count():
    spec = registry.find("fill_constant")
    shape = [2, 3]
    first, _ = spec.complete_attrs({"shape": shape, "dtype": 5, "value": 1.0})
    second, _ = spec.complete_attrs({"shape": shape, "dtype": 5, "value": 1.0})
    assert first == second and first["shape"] == [2, 3]
    assert first["shape"] is not second["shape"] and first["shape"] is not shape
    first["shape"].append(4)
    shape.append(5)  # the caller's list changed: another key
    third, _ = spec.complete_attrs({"shape": shape, "dtype": 5, "value": 1.0})
    assert third["shape"] == [2, 3, 5]
    assert spec.complete_attrs({"shape": (2, 3), "dtype": 5, "value": 1.0})[0]["shape"] \
        == [2, 3]
    with pytest.raises(InvalidArgument, match="attribute 'shape' expected"):
        spec.complete_attrs({"shape": [2.0, 3], "dtype": 5, "value": 1.0})


def test_append_op_completes_attributes_given_again_as_complete_attrs_does():
    """An op appended with attributes given before takes them from the definition's memo
    in C (``_op_record.completed``): what ``complete_attrs`` gives, a list a copy of each
    op's own, a tuple keyed apart from a list, a float in an int list refused each time."""
    from fluid_nb.framework.program import _completed_attrs
    block = _block()
    spec = registry.find("fill_constant")
    given = {"shape": [2, 3], "dtype": 5, "value": 1.0}
    ops = [block.append_op(type="fill_constant", outputs={"Out": name}, attrs=dict(given))
           for name in ("a", "b", "c")]
    expected, types = spec.complete_attrs(dict(given))
    assert _completed_attrs(spec, dict(given)) == (expected, types)
    assert all(op.attrs == expected for op in ops)
    assert ops[0].attrs["shape"] is not ops[1].attrs["shape"]
    ops[0].attrs["shape"].append(9)
    assert ops[2].attrs["shape"] == [2, 3] and spec.complete_attrs(dict(given))[0] == expected
    as_tuple = {**given, "shape": (2, 3)}
    assert block.append_op(type="fill_constant", outputs={"Out": "d"},
                           attrs=as_tuple).attrs["shape"] == [2, 3]
    assert _completed_attrs(spec, as_tuple)[0]["shape"] == [2, 3]
    for name in ("e", "f"):
        with pytest.raises(InvalidArgument, match="attribute 'shape' expected"):
            block.append_op(type="fill_constant", outputs={"Out": name},
                            attrs={**given, "shape": [2.0, 3]})
    assert _completed_attrs(spec, {**given, "shape": [2.0, 3]}) is None  # never kept
    assert _completed_attrs(spec, {**given, "shape": [2, [3]]}) is None  # no scalar: afresh
    assert _completed_attrs(spec, {**given, "value": 7.5}) is None  # not given before
    assert [op.type for op in block.ops] == ["fill_constant"] * 4
