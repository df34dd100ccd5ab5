"""A checked layer matches a call's arguments to its parameters as Python binds them: an
argument passed by position or by keyword is checked alike, the first wrong one in the
signature's order is named, and a call that does not fit the signature (an unknown or
repeated argument, a missing or extra one) is refused naming the signature. Nothing is
appended by a refused call."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType

L = fluid.layers


@pytest.fixture
def x():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        yield L.data(name="x", shape=[4], dtype="float32")


def _ops(var):
    return [op.type for op in var.block.ops]


@pytest.mark.parametrize("call", [
    lambda x: L.fc(x, 3, 1, None, None, "relu"),
    lambda x: L.fc(x, 3, act="relu"),
    lambda x: L.fc(input=x, size=3, act="relu"),
    lambda x: L.fc(act="relu", size=3, input=x),
])
def test_a_good_call_in_any_form_appends_the_layer(x, call):
    out = call(x)
    assert out.shape == (-1, 3) and _ops(x) == ["mul", "elementwise_add", "relu"]


@pytest.mark.parametrize("call", [
    lambda x: L.fc(x, 2.5),
    lambda x: L.fc(x, size=2.5),
    lambda x: L.fc(size=2.5, input=x),
])
def test_a_wrong_value_is_named_however_it_was_passed(x, call):
    with pytest.raises(InvalidArgument, match=r"fc: size expected a positive int, but "
                                              r"received 2.5 \(float\)"):
        call(x)
    assert _ops(x) == []


@pytest.mark.parametrize("call", [
    lambda x: L.fc(x, 0, act="nope"),
    lambda x: L.fc(act="nope", size=0, input=x),
])
def test_of_two_wrong_arguments_the_first_in_the_signature_is_named(x, call):
    with pytest.raises(InvalidArgument, match="fc: size expected"):
        call(x)


@pytest.mark.parametrize("call, problem", [
    (lambda x: L.softmax(x, sizes=3), "unexpected keyword argument 'sizes'"),
    (lambda x: L.softmax(x, input=x), "multiple values for argument 'input'"),
    (lambda x: L.softmax(axis=1), "missing a required argument: 'input'"),
    (lambda x: L.softmax(x, False, None, -1, 5), "too many positional arguments"),
])
def test_a_call_that_does_not_fit_the_signature_is_refused_naming_it(x, call, problem):
    with pytest.raises(InvalidType, match=r"softmax: arguments expected the signature "
                                          r"softmax\(input, use_cudnn=False, name=None, "
                                          r"axis=-1\), but received (got an )?" + problem):
        call(x)
    assert _ops(x) == []


@pytest.mark.parametrize("call, error, text", [
    # the dtype first (Fluid 1.8's check_variable_and_dtype opens the layer), then the rest
    (lambda x, n: L.relu(n, name=3), InvalidType, r"relu: x's dtype expected one of float16, "
                                                  r"float32, float64, but received int32"),
    (lambda x, n: L.softmax(n, axis=7), InvalidType, r"softmax: input's dtype expected"),
    (lambda x, n: L.relu(x, name=3), InvalidType, r"relu: name expected"),
    (lambda x, n: L.relu("x"), InvalidType, r"relu: x expected a Variable, but received 'x'"),
    (lambda x, n: L.softmax(x, axis=2.5), InvalidArgument, r"softmax: axis expected an int"),
    (lambda x, n: L.sums([x, L.data(name="b", shape=[4], dtype="bool")]), InvalidType,
     r"sums: input's dtype expected one of int32, int64, float32, float64, but received "
     r"bool"),  # (each Variable of a list)
])
def test_a_layer_checks_its_arguments_dtypes_first_then_their_rules(x, call, error, text):
    counts = L.data(name="n", shape=[4], dtype="int32")
    with pytest.raises(error, match=text):
        call(x, counts)
    assert _ops(x) == []


def test_a_parameter_of_an_allowed_dtype_passes_the_dtype_check(x):
    weight = fluid.default_main_program().global_block().create_parameter(
        name="w", shape=[4, 4], dtype="float32")
    out = L.softmax(L.relu(weight), axis=0)
    assert out.shape == (4, 4) and _ops(x) == ["relu", "softmax"]


def test_dtype_rules_given_after_a_first_call_are_checked_on_the_next_one():
    """A call of positional arguments only is checked by a plan made at the first such
    call: rules a layer is given later (``__check_dtypes__``) make a new one."""
    from fluid_nb.api.layers.arg_checks import NAME, checks, variable
    refused = []

    @checks(x=variable, name=NAME)
    def double(x, name=None):
        return x

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data(name="x", shape=[4], dtype="float32")
        assert double(x) is x
        double.__check_dtypes__([(0, "x", {fluid.core.VarDesc.VarType.FP64}, "float64")],
                                lambda *args: refused.append(args[1:]))
        assert double(x) is x and double(x, None) is x
    assert refused == [("x", x, {fluid.core.VarDesc.VarType.FP64}, "float64")] * 2
