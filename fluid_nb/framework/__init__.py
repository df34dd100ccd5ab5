"""Compile time: programs, blocks, variables, operators. Never imports the runtime."""
from . import unique_name  # noqa: F401
from .annotations import device_guard, name_scope  # noqa: F401
from .attrs import AttrType  # noqa: F401
from ..tensor.dtypes import VarType, convert_dtype, dtype_name, to_numpy_dtype  # noqa: F401
from .program import (  # noqa: F401
    Block, Operator, Parameter, Program, Variable, default_main_program,
    default_startup_program, grad_var_name, program_guard, switch_main_program,
    switch_startup_program)

#: Fluid 1.8's name for turning a NumPy dtype (or its name) into a VarType
convert_np_dtype_to_dtype_ = convert_dtype

