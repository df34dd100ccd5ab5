"""What two ways of appending ops must agree on: a program's record (every variable's fields,
every op's type, arguments and attributes, the program's version), which op types had
their shape inference run rather than answered from a memo, which appends the C path
handed to its Python way, and the transactions opened."""
import pytest

from fluid_nb.framework import annotations, program as fw, registry, transaction, unique_name
from fluid_nb.framework.callstack import _op_record

VAR_FIELDS = ("name", "type", "shape", "dtype", "lod_level", "persistable", "stop_gradient",
              "is_data", "need_check_feed", "error_clip")


def record(program):
    """The global block's variables (VAR_FIELDS each) and ops, and the program's version."""
    block = program.global_block()
    variables = [tuple(getattr(v, f) for f in VAR_FIELDS) for v in block.vars.values()]
    ops = [(op.type, op.inputs, op.outputs, op.attrs, op.attr_types, op.is_target)
           for op in block.ops]
    return variables, ops, program._version


def answer(call):
    """What ``call()`` answers, as two ways of appending must agree on it: its Variable's
    name, another value, or the error it raised (its class and words)."""
    try:
        result = call()
        return result.name if isinstance(result, fw.Variable) else ("returned", result)
    except Exception as error:
        return ("raised", type(error), str(error))


def replays_as_its_python_way(layer, calls, session):
    """Whether the replayed ``layer`` (a ``OneOpCall``) appends and answers what its Python
    way does: ``calls`` made in turn by ``session(layer, calls)`` (a record and answers,
    compared answers first), then each call alone after another program's calls (the
    replays a key that differs by a class or a value could wrongly find)."""
    assert isinstance(layer, _op_record.OneOpCall)
    replayed, python_way = session(layer, calls), session(layer.__wrapped__, calls)
    assert replayed[1] == python_way[1]
    assert replayed[0] == python_way[0]
    for call in calls:
        assert session(layer, [call])[:2] == session(layer.__wrapped__, [call])[:2]
    return True


@pytest.fixture
def inferences(monkeypatch):
    """The op types whose shape inference ran (not answered from a memo)."""
    ran = []
    infer = registry.OpDef._infer

    def counted(self, op):
        ran.append(op.type)
        return infer(self, op)
    monkeypatch.setattr(registry.OpDef, "_infer", counted)
    return ran


class Fallbacks:
    """The Python way as the C path's fallback, counting the calls it is handed."""

    def __init__(self, python_way=transaction._append_one_op):
        self.calls = []
        self.python_way = python_way

    def __call__(self, *args, **kwargs):
        self.calls.append(args[1])
        return self.python_way(*args, **kwargs)


#: the C paths' fallbacks now (a fixture replaces one and puts it back)
_FALLBACKS = {"one_op": transaction._append_one_op, "with_xshape": transaction._append_with_xshape,
              "fresh": transaction._append_fresh}


def configure(**fallbacks):
    """The C paths' fallbacks (``one_op``, ``with_xshape``, ``fresh``) set to those given,
    the others left as they are."""
    _FALLBACKS.update(fallbacks)
    _op_record.configure_one_op(_FALLBACKS["one_op"], transaction._take_back_one_op,
                                _FALLBACKS["with_xshape"], transaction._take_back_with_xshape,
                                _FALLBACKS["fresh"], transaction._take_back_fresh, fw,
                                transaction, unique_name, annotations)


def _spying(path, python_way):
    spy = Fallbacks(python_way)
    configure(**{path: spy})
    yield spy
    configure(**{path: python_way})


@pytest.fixture
def fallbacks():
    """The appends ``append_one_op``'s C path handed to its Python way (``.calls``: their op
    types)."""
    yield from _spying("one_op", transaction._append_one_op)


@pytest.fixture
def fresh_fallbacks():
    """The appends ``append_fresh``'s C path handed to its Python way (``.calls``: their op
    types)."""
    yield from _spying("fresh", transaction._append_fresh)


@pytest.fixture
def transactions(monkeypatch):
    """The transactions opened (each ``transaction._open``)."""
    opened = []
    open_ = transaction._open

    def counted(programs):
        opened.append(programs)
        return open_(programs)
    monkeypatch.setattr(transaction, "_open", counted)
    return opened
