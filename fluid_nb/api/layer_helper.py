"""LayerHelper: what every layer function uses to add its parameters, temporaries and ops.

Naming follows Fluid exactly, so programs built here match Paddle's: a helper for layer
type ``fc`` takes the name ``fc_<n>`` (or the ``name=`` it was given); its parameters are
``fc_0.w_0``, ``fc_0.b_0``, its temporaries ``fc_0.tmp_0``, ``fc_0.tmp_1``, ...

A parameter lives twice: as a Parameter in the main program's global block, and as a
same-named persistable Parameter in the startup program's global block, where its
initializer op is appended.
"""
import copy

from ..errors import InvalidArgument, InvalidType
from ..framework import program as _fw
from ..framework import unique_name
from ..tensor.dtypes import VarType, convert_dtype
from ..framework.program import Variable, default_main_program, default_startup_program
from .param_attr import ParamAttr


class LayerHelper:
    def __init__(self, layer_type, **kwargs):
        self.kwargs = kwargs
        self.layer_type = layer_type
        if self.kwargs.get("name") is None:
            self.kwargs["name"] = unique_name.generate(layer_type)

    @property
    def name(self):
        return self.kwargs["name"]

    @property
    def main_program(self):
        return default_main_program()

    @property
    def startup_program(self):
        return default_startup_program()

    def append_op(self, *args, **kwargs):
        program = _fw._main_program  # (default_main_program(), read directly: every layer's path)
        return program.blocks[program.current_block_idx].append_op(*args, **kwargs)

    # --- inputs ---------------------------------------------------------------------------
    def multiple_input(self, input_param_name="input"):
        inputs = self.kwargs.get(input_param_name, [])
        if isinstance(inputs, Variable):
            return [inputs]
        if isinstance(inputs, (list, tuple)):
            for item in inputs:
                if not isinstance(item, Variable):
                    raise InvalidType(f"{self.layer_type}: {input_param_name} expected "
                                      f"Variable or a list of Variables, but received a "
                                      f"list holding {type(item).__name__}")
            return list(inputs)
        raise InvalidType(f"{self.layer_type}: {input_param_name} expected Variable or "
                          f"a list of Variables, but received {type(inputs).__name__}")

    def input(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        if len(inputs) != 1:
            raise InvalidArgument(f"{self.layer_type}: {input_param_name} expected one "
                                  f"Variable, but received {len(inputs)}")
        return inputs[0]

    @property
    def param_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("param_attr"))

    @property
    def bias_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("bias_attr"))

    def multiple_param_attr(self, length):
        attrs = self.param_attr
        if isinstance(attrs, ParamAttr):
            attrs = [attrs]
        if len(attrs) != 1 and len(attrs) != length:
            raise InvalidArgument(f"{self.layer_type}: param_attr expected 1 or {length} "
                                  f"attributes (one per input), but received {len(attrs)}")
        if len(attrs) == 1 and length != 1:
            attrs = [copy.deepcopy(attrs[0]) for _ in range(length)]
        return attrs

    def iter_inputs_and_params(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        return zip(inputs, self.multiple_param_attr(len(inputs)))

    def input_dtype(self, input_param_name="input"):
        dtype = None
        for each in self.multiple_input(input_param_name):
            if dtype is None:
                dtype = each.dtype
            elif dtype != each.dtype:
                raise InvalidArgument(f"{self.layer_type}: inputs expected one data type, but "
                                      f"received {dtype.name} and {each.dtype.name}")
        return dtype

    # --- parameters -----------------------------------------------------------------------
    def create_parameter(self, attr, shape, dtype=None, is_bias=False, default_initializer=None,
                         stop_gradient=False, type=VarType.LOD_TENSOR):
        """A Parameter named by ``attr`` (or ``<layer>.w_<n>``/``<layer>.b_<n>``), with its
        initializer appended to the startup program. Returns None when ``attr`` is False."""
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        # (copy.deepcopy's dispatch, without its generic steps: a ParamAttr copies itself)
        attr = attr.__deepcopy__({}) if isinstance(attr, ParamAttr) else copy.deepcopy(attr)
        if dtype is None:
            dtype = VarType.FP32
        dtype = convert_dtype(dtype)
        shape = list(map(int, shape))
        if shape and min(shape) < 0:
            raise InvalidArgument(f"{self.layer_type}: parameter shape expected dims no "
                                  f"less than 0, but received {shape}")
        if default_initializer is None and attr.initializer is None:
            if is_bias:
                attr._set_default_bias_initializer()
            elif dtype in (VarType.FP32, VarType.FP64, VarType.FP16, VarType.BF16):
                attr._set_default_param_initializer()
            else:
                from .initializer import ConstantInitializer
                attr._set_default_initializer(ConstantInitializer(0.0))
        else:
            attr._set_default_initializer(default_initializer)
        if attr.name is None:
            attr.name = unique_name.generate(".".join([self.name, "b" if is_bias else "w"]))

        startup = self.startup_program.global_block()
        if attr.name not in startup.vars:
            # (the startup block's create_parameter appends the initializer's op)
            startup.create_parameter(dtype=dtype, shape=shape, type=type,
                                     **attr._to_kwargs(with_initializer=True))
        param = self.main_program.global_block().create_parameter(
            dtype=dtype, shape=shape, type=type, **attr._to_kwargs())
        if stop_gradient:
            param.stop_gradient = True
        return param

    def get_parameter(self, name):
        param = self.main_program.global_block()._find_var_recursive(name)
        if param is None or not param.is_parameter:
            raise InvalidArgument(f"{self.layer_type}: '{name}' expected to be a parameter, "
                                  f"but it is not")
        return param

    # --- variables ------------------------------------------------------------------------
    def create_variable_for_type_inference(self, dtype, stop_gradient=False):
        """A temporary ``<layer>.tmp_<n>`` in the current block; its shape is set by the op
        that writes it."""
        program = _fw._main_program
        block = program.blocks[program.current_block_idx]
        name = unique_name._generator(self.kwargs["name"] + ".tmp")
        var = block._create_temporary(
            name, dtype if dtype.__class__ is VarType else convert_dtype(dtype))
        if stop_gradient:
            var.stop_gradient = True
        return var

    create_tmp_variable = create_variable_for_type_inference

    @staticmethod
    def unnamed_output(layer_type, dtype):
        """The output of a one-op layer called without ``name=`` or ``act=``, named as a
        helper would name it (``<layer_type>_<n>.tmp_0``) without making one: the
        elementwise layers and activations are most of what a live cell appends."""
        program = _fw._main_program
        generate = unique_name._generator
        return program.blocks[program.current_block_idx]._create_temporary(
            generate(generate(layer_type) + ".tmp"), dtype)

    def create_variable(self, *args, **kwargs):
        return self.main_program.current_block().create_var(*args, **kwargs)

    def create_global_variable(self, persistable=False, *args, **kwargs):
        return self.main_program.global_block().create_var(*args, persistable=persistable,
                                                            **kwargs)

    def create_or_get_global_variable(self, name, *args, **kwargs):
        """``(variable, is_new)`` as Fluid returns it: the existing global variable and
        False, or a new one and True."""
        block = self.main_program.global_block()
        if name in block.vars:
            return block.vars[name], False
        return self.create_global_variable(*args, name=name, **kwargs), True

    def set_variable_initializer(self, var, initializer):
        """Declare ``var`` persistable in the startup program and initialise it there."""
        startup = self.startup_program.global_block()
        if var.name in startup.vars:
            return startup.vars[var.name]
        svar = startup.create_var(name=var.name, type=var.type, dtype=var.dtype,
                                  shape=var.shape, lod_level=var.lod_level, persistable=True)
        initializer(svar, startup)
        return svar

    # --- common tails of layers ---------------------------------------------------------
    def append_bias_op(self, input_var, dim_start=1, dim_end=None):
        """``input_var + b`` with ``b`` shaped like ``input_var.shape[dim_start:dim_end]``
        (elementwise_add, axis=dim_start); ``input_var`` itself when bias_attr is False."""
        bias_attr = self.bias_attr
        if not bias_attr:
            return input_var
        size = list(input_var.shape[dim_start:dim_end])
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype,
                                  is_bias=True)
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(type="elementwise_add", inputs={"X": [input_var], "Y": [b]},
                       outputs={"Out": [tmp]}, attrs={"axis": dim_start})
        return tmp

    def append_activation(self, input_var):
        """Apply ``act=`` (an op type string, or a dict with 'type' and attributes)."""
        act = self.kwargs.get("act")
        if act is None:
            return input_var
        if isinstance(act, str):
            act = {"type": act}
        elif isinstance(act, dict) and "type" in act:
            act = dict(act)
        else:
            raise InvalidArgument(f"{self.layer_type}: act expected an activation name "
                                  f"string, but received {act!r}")
        if self.kwargs.get("use_cudnn"):
            act["use_cudnn"] = True
        if self.kwargs.get("use_mkldnn"):
            act["use_mkldnn"] = True
        act_type = act.pop("type")
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [tmp]},
                       attrs=act)
        return tmp

    def is_instance(self, param_name, cls):
        param = self.kwargs.get(param_name)
        if not isinstance(param, cls):
            raise InvalidType(f"{self.layer_type}: {param_name} expected "
                              f"{cls.__name__}, but received {type(param).__name__}")
