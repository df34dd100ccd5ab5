"""ParamAttr: how a layer should create one of its parameters (name, initializer, learning
rate multiplier, regularizer, trainable, clipping)."""
import copy

from ..errors import InvalidArgument, InvalidType
from .initializer import ConstantInitializer, Initializer, XavierInitializer
from .regularizer import WeightDecayRegularizer

#: classes whose objects a copy shares: they cannot change
_VALUES = frozenset((int, float, bool, str, type(None)))
#: the modules of this package's initializers and regularizers: plain objects whose fields
#: say all
_OWN = frozenset(("fluid_nb.api.initializer", "fluid_nb.api.regularizer"))


def _copy_of(value, memo):
    """``copy.deepcopy(value, memo)``, field by field for this package's initializers and
    regularizers (the generic copy's dispatch costs a layer call more than the rest of
    making its parameters)."""
    kind = value.__class__
    if kind in _VALUES:
        return value
    if kind.__module__ not in _OWN:  # a user's own initializer, an array: the generic copy
        return copy.deepcopy(value, memo)
    return _fields_copied(value, memo)


def _fields_copied(value, memo):
    """A new object of ``value``'s class whose fields are copies of its fields (a plain
    value's copy is the value itself: only the others are copied)."""
    new = memo.get(id(value))
    if new is None:
        kind = value.__class__
        new = memo[id(value)] = kind.__new__(kind)
        fields = new.__dict__
        fields.update(value.__dict__)
        if not _VALUES.issuperset(map(type, fields.values())):
            for name, field in fields.items():
                if field.__class__ not in _VALUES:
                    fields[name] = _copy_of(field, memo)
    return new


class ParamAttr:
    """Fluid's parameter attribute.

    ``param_attr=`` of a layer accepts a ParamAttr, a name string, an Initializer, a
    regularizer, ``False`` (no parameter: only meaningful for biases) or None (defaults).
    """

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=True, need_clip=True, gradient_clip=None):
        if name is not None and not isinstance(name, str):
            raise InvalidType(f"ParamAttr: name expected str, but received "
                              f"{type(name).__name__}")
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise InvalidType(f"ParamAttr: learning_rate expected float, but received "
                              f"{type(learning_rate).__name__}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = need_clip
        # Fluid 1.x per-parameter clip; kept so scripts passing it still run
        self.gradient_clip = gradient_clip

    def __deepcopy__(self, memo):
        # a layer copies the attribute it was given for each parameter it makes (as Fluid's
        # LayerHelper does), so that what it sets is not set in the caller's; a subclass's
        # fields too
        return _fields_copied(self, memo)

    def _set_default_initializer(self, initializer):
        if initializer is None:
            if self.initializer is None:
                raise InvalidArgument("ParamAttr: an initializer expected, but neither the "
                                      "attribute nor the layer gave one")
            return
        if self.initializer is None:
            self.initializer = initializer

    def _set_default_param_initializer(self):
        self._set_default_initializer(XavierInitializer())

    def _set_default_bias_initializer(self):
        self._set_default_initializer(ConstantInitializer(0.0))

    @staticmethod
    def _to_attr(arg):
        """Normalise what a layer received as ``param_attr``/``bias_attr``."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, WeightDecayRegularizer):
            return ParamAttr(regularizer=arg)
        if isinstance(arg, bool):
            return ParamAttr() if arg else False
        raise InvalidType(f"ParamAttr: attribute expected ParamAttr, str, Initializer, "
                          f"regularizer, bool or None, but received {type(arg).__name__}")

    def _to_kwargs(self, with_initializer=False):
        kwargs = {"name": self.name, "optimize_attr": {"learning_rate": self.learning_rate},
                  "regularizer": self.regularizer, "trainable": self.trainable,
                  "do_model_average": self.do_model_average, "need_clip": self.need_clip}
        if with_initializer:
            kwargs["initializer"] = self.initializer
        return kwargs

    def __repr__(self):
        return (f"ParamAttr(name={self.name!r}, initializer={type(self.initializer).__name__}, "
                f"learning_rate={self.learning_rate}, trainable={self.trainable})")


class WeightNormParamAttr(ParamAttr):
    """Weight normalisation's attribute. ``dim`` is recorded; the parameter itself is made
    as an ordinary one (the g/v reparameterisation is not built)."""

    params_with_weight_norm = []

    def __init__(self, dim=None, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
