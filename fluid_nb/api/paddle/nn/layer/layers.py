"""``paddle.nn.Layer``: an object that holds parameters and adds ops when called.

Fluid 1.8's ``paddle.nn`` classes derive from its imperative ``Layer``; called in static mode
that Layer records ops into the default main program, and that is what this one does (the
only mode fluid_nb has). A layer's parameters are created when the layer is made, in the
default main and startup programs of that moment, named ``<layer>_<n>.w_<k>`` /
``.b_<k>``; each call adds the forward ops to the current block::

    import fluid_nb as fluid
    import fluid_nb.paddle as paddle

    x = fluid.data(name="x", shape=[4, 3], dtype="float32")
    y = paddle.nn.ReLU()(x)                      # one relu op in the main program

A subclass writes ``__init__`` (calling ``super().__init__()`` first, then
``self.create_parameter``) and ``forward``. Parameters and sub-layers assigned to attributes
are registered, so ``parameters()`` and ``state_dict()`` find them.
"""
import collections
import re

from .....errors import InvalidArgument, InvalidType, expected
from .....framework import unique_name
from .....framework.program import Parameter, default_main_program
from ....layer_helper import LayerHelper
from .....tensor.dtypes import convert_dtype

__all__ = ["Layer"]


def _snake_case(name):
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2",
                  re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)).lower()


class HookRemoveHelper:
    """What ``register_forward_*_hook`` returns: ``remove()`` takes the hook off again."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self._id = HookRemoveHelper._next_id
        HookRemoveHelper._next_id += 1

    def remove(self):
        self._hooks.pop(self._id, None)


class Layer:
    """Base of the ``paddle.nn`` layers: parameters made once, ops added per call."""

    def __init__(self, name_scope=None, dtype="float32"):
        if name_scope is not None and not isinstance(name_scope, str):
            raise InvalidType(expected(type(self).__name__, "name_scope", "a str or None",
                                       type(name_scope).__name__))
        self.training = True
        self._full_name = unique_name.generate(name_scope or _snake_case(type(self).__name__))
        self._helper = LayerHelper(self._full_name, name=self._full_name)
        self._dtype = dtype
        self._parameters = collections.OrderedDict()
        self._sub_layers = collections.OrderedDict()
        self._forward_pre_hooks = collections.OrderedDict()
        self._forward_post_hooks = collections.OrderedDict()

    # --- naming and mode -----------------------------------------------------------------
    def full_name(self):
        """The unique name of this layer (``relu_0``, ``conv2d_1``): its parameters'
        prefix."""
        return self._full_name

    def train(self):
        """Mark the layer and its sub-layers as training (layers that differ read
        ``self.training``)."""
        for layer in self._walk():
            layer.training = True

    def eval(self):
        """Mark the layer and its sub-layers as evaluating."""
        for layer in self._walk():
            layer.training = False

    # --- parameters and sub-layers -----------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype="float32", is_bias=False,
                         default_initializer=None):
        """A Parameter ``<full_name>.w_<n>`` (``.b_<n>`` for a bias) of ``shape`` in the
        default main program, its initializer in the default startup program; None when
        ``attr`` is False."""
        if isinstance(dtype, str) and dtype == "":
            dtype = self._dtype
        return self._helper.create_parameter(attr, shape, convert_dtype(dtype), is_bias,
                                             default_initializer)

    def create_variable(self, name=None, persistable=None, dtype=None, type=None):
        """A variable in the main program's current block, named ``<full_name>.<n>``
        unless ``name`` is given."""
        name = name or unique_name.generate(self._full_name + ".var")
        kwargs = {"name": name, "persistable": bool(persistable),
                  "dtype": convert_dtype(dtype if dtype is not None else self._dtype)}
        if type is not None:
            kwargs["type"] = type
        return default_main_program().current_block().create_var(**kwargs)

    def add_parameter(self, name, parameter):
        """Register ``parameter`` (a Parameter, or None) under ``name``."""
        if not isinstance(name, str) or "." in name or not name:
            raise InvalidArgument(expected(self._full_name, "parameter name",
                                           "a non-empty str without '.'", repr(name)))
        if parameter is not None and not isinstance(parameter, Parameter):
            raise InvalidType(expected(self._full_name, f"parameter {name!r}",
                                       "Parameter or None", type(parameter).__name__))
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name, sublayer):
        """Register ``sublayer`` (a Layer) under ``name``; returns it."""
        if not isinstance(sublayer, Layer):
            raise InvalidType(expected(self._full_name, f"sublayer {name!r}", "Layer",
                                       type(sublayer).__name__))
        self._sub_layers[name] = sublayer
        return sublayer

    def parameters(self, include_sublayers=True):
        """The parameters of this layer (and of its sub-layers), each once."""
        return [param for _, param in self.named_parameters(include_sublayers=include_sublayers)]

    def named_parameters(self, prefix="", include_sublayers=True):
        """``(structured name, Parameter)`` pairs: ``weight``, ``sub.weight``, ..."""
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_sublayers=include_sublayers,
                                      include_self=True)
        for layer_prefix, layer in layers:
            for name, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (layer_prefix + "." if layer_prefix else "") + name, param

    def sublayers(self, include_sublayers=True):
        """The sub-layers (recursively unless ``include_sublayers`` is False)."""
        return [layer for _, layer in self.named_sublayers(include_sublayers=include_sublayers)]

    def named_sublayers(self, prefix="", include_sublayers=True, include_self=False):
        """``(structured name, Layer)`` pairs, depth first, each layer once."""
        seen = set()

        def walk(layer, name, depth):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            if depth > 0 or include_self:
                yield name, layer
            if depth > 0 and not include_sublayers:
                return
            for key, sub in layer._sub_layers.items():
                if sub is not None:
                    yield from walk(sub, (name + "." if name else "") + key, depth + 1)
        return walk(self, prefix, 0)

    def _walk(self):
        return [self] + self.sublayers()

    def state_dict(self, include_sublayers=True):
        """Structured parameter names mapped to the Parameters (their values live in the
        scope the startup program ran in)."""
        return collections.OrderedDict(self.named_parameters(include_sublayers=include_sublayers))

    # --- calling ---------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """``hook(layer, inputs)`` runs before ``forward``; a non-None result replaces the
        inputs."""
        helper = HookRemoveHelper(self._forward_pre_hooks)
        self._forward_pre_hooks[helper._id] = hook
        return helper

    def register_forward_post_hook(self, hook):
        """``hook(layer, inputs, outputs)`` runs after ``forward``; a non-None result
        replaces the outputs."""
        helper = HookRemoveHelper(self._forward_post_hooks)
        self._forward_post_hooks[helper._id] = hook
        return helper

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not written")

    def __call__(self, *inputs, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    # --- attribute registration ----------------------------------------------------------
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise InvalidArgument(expected(type(self).__name__, "parameter assignment",
                                               "super().__init__() called first",
                                               f"self.{name} set before it"))
            self.__dict__.get("_sub_layers", {}).pop(name, None)
            params[name] = value
            self.__dict__.pop(name, None)
            return
        if isinstance(value, Layer):
            layers = self.__dict__.get("_sub_layers")
            if layers is None:
                raise InvalidArgument(expected(type(self).__name__, "sub-layer assignment",
                                               "super().__init__() called first",
                                               f"self.{name} set before it"))
            if params is not None:
                params.pop(name, None)
            layers[name] = value
            self.__dict__.pop(name, None)
            return
        if params is not None and name in params:
            if value is not None:
                raise InvalidType(expected(type(self).__name__, f"parameter {name!r}",
                                           "Parameter or None", type(value).__name__))
            params[name] = None
            return
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for table in ("_parameters", "_sub_layers"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in ("_parameters", "_sub_layers"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                del entries[name]
                return
        object.__delattr__(self, name)

    def __repr__(self):
        return f"{type(self).__name__}(name={self._full_name!r})"
