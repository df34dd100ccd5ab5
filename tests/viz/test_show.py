"""``viz.show``: a program as a cell result opened at a chosen part."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.viz import MIME_TYPE, show


def _program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 4], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main


def test_the_bundle_carries_where_the_graph_opens():
    program = _program()
    weight = program.global_block().all_parameters()[0].name
    bundle = show(program, reveal=weight, hide=["optimize"])._repr_mimebundle_()
    model = bundle[MIME_TYPE]
    assert model["view"] == {"reveal": weight, "hiddenRoles": ["optimize"]}
    assert model["stats"]["ops"] > 0 and weight in bundle["text/html"]
    assert "sgd" not in bundle["text/vnd.graphviz"]  # the DOT leaves the hidden role out too


def test_without_a_part_it_opens_at_first_sight():
    assert show(_program())._repr_mimebundle_()[MIME_TYPE]["view"] == {}


@pytest.mark.parametrize("kwargs, error, words", [
    ({"program": "main"}, InvalidType, "a Program"),
    ({"reveal": ""}, InvalidArgument, "a non-empty str"),
    ({"hide": ["forward"]}, InvalidArgument, "roles among"),
])
def test_bad_arguments_say_what_was_expected(kwargs, error, words):
    program = kwargs.pop("program", None) or _program()
    with pytest.raises(error) as info:
        show(program, **kwargs)
    assert words in str(info.value)
