"""A layer works on a deep copy of the ParamAttr it is given, as Fluid's LayerHelper does:
the caller's attribute, initializer and regularizer stay as they were, and each parameter
gets its own."""
import copy

import numpy as np

import fluid_nb as fluid
from fluid_nb.api.initializer import Initializer, NumpyArrayInitializer, XavierInitializer
from fluid_nb.api.param_attr import ParamAttr, WeightNormParamAttr
from fluid_nb.api.regularizer import L2Decay


def test_a_layer_leaves_the_callers_attribute_as_it_was():
    attr = ParamAttr(learning_rate=0.5, regularizer=L2Decay(0.1))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        fluid.layers.fc(x, 3, param_attr=attr)
        fluid.layers.fc(x, 3, param_attr=attr)
    assert attr.name is None and attr.initializer is None  # defaults set on the copies
    weights = [p for p in main.global_block().all_parameters() if ".w_" in p.name]
    assert [p.name for p in weights] == ["fc_0.w_0", "fc_1.w_0"]
    assert all(p.optimize_attr["learning_rate"] == 0.5 for p in weights)
    assert weights[0].regularizer is not attr.regularizer
    assert weights[0].regularizer is not weights[1].regularizer
    assert weights[0].regularizer._coeff == 0.1


def test_a_copy_has_fields_of_its_own_all_the_way_down():
    values = np.arange(6, dtype="float32").reshape(2, 3)
    attr = ParamAttr(name="w", initializer=NumpyArrayInitializer(values), learning_rate=2.0,
                     regularizer=L2Decay(0.5), trainable=False)
    copied = copy.deepcopy(attr)
    assert copied.__class__ is ParamAttr and vars(copied).keys() == vars(attr).keys()
    assert (copied.name, copied.learning_rate, copied.trainable) == ("w", 2.0, False)
    assert copied.initializer is not attr.initializer
    assert copied.initializer._value is not values
    np.testing.assert_array_equal(copied.initializer._value, values)
    assert copied.regularizer is not attr.regularizer
    assert copied.regularizer._coeff == 0.5
    copied.initializer._value[0, 0] = 7
    assert values[0, 0] == 0


def test_one_object_in_two_fields_stays_one_object_in_the_copy():
    init = XavierInitializer(seed=3)
    attr = ParamAttr(initializer=init)
    attr.gradient_clip = init
    copied = copy.deepcopy(attr)
    assert copied.initializer is copied.gradient_clip and copied.initializer is not init
    assert vars(copied.initializer) == vars(init)


class _CountingInitializer(Initializer):
    """A user's initializer with state of its own, copied by the generic deep copy."""

    def __init__(self):
        self.calls = []

    def __call__(self, var, block):
        self.calls.append(var.name)
        return fluid.initializer.Constant(1.0)(var, block)


def test_user_classes_are_copied_as_copy_deepcopy_copies_them():
    class Named(ParamAttr):
        def __init__(self, tag, **kwargs):
            super().__init__(**kwargs)
            self.tag = [tag]

    attr = Named("t", initializer=_CountingInitializer())
    copied = copy.deepcopy(attr)
    assert copied.__class__ is Named and copied.tag == ["t"] and copied.tag is not attr.tag
    assert copied.initializer.__class__ is _CountingInitializer
    assert copied.initializer.calls is not attr.initializer.calls
    normed = copy.deepcopy(WeightNormParamAttr(dim=1, name="v"))
    assert normed.__class__ is WeightNormParamAttr and (normed.dim, normed.name) == (1, "v")
