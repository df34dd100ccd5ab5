"""``fluid.save`` / ``fluid.load`` and program states, in Fluid 1.8's files.

``fluid.save(program, "m")`` writes three files:

- ``m.pdparams``: the parameters, a pickled ``{name: numpy.ndarray}`` (protocol 2);
- ``m.pdopt``: the other persistables (optimizer moments, learning rates, counters; data
  variables excepted), pickled the same way;
- ``m.pdmodel``: the program, as ``ProgramDesc`` bytes.

Reading them never runs code from a file: the unpickler knows only the few NumPy names an
array's pickle refers to, and anything else is refused with the name it asked for.
Directories and combined files written by ``save_params``/``save_persistables``/
``save_vars`` load too, as in Fluid, and so does ``m.pdtensors`` (all persistables as one
LoDTensor stream, in sorted-name order), which earlier versions of fluid_nb wrote.

Every load reads and checks everything before it sets the first value, so a failed load
leaves the scope as it was.
"""
import codecs
import collections
import io as _io
import os
import pickle
import warnings

import numpy as np

from ..errors import FluidError, InvalidArgument, InvalidType, NotFound, PreconditionNotMet, \
    expected
from ..framework.program import Parameter, Program, Variable
from ..tensor.dtypes import dtype_name

_SUFFIXES = (".pdparams", ".pdopt", ".pdmodel")
#: the combined tensor stream earlier fluid_nb versions wrote for ``save``
LEGACY_SUFFIX = ".pdtensors"


def is_belong_to_optimizer(var):
    """A persistable that is neither a parameter nor a data variable (Fluid's rule for
    what goes to ``.pdopt``)."""
    from .io import is_persistable
    if isinstance(var, Parameter) or var.need_check_feed:
        return False
    return is_persistable(var)


# --- pickles of arrays --------------------------------------------------------------------
def _latin1_encode(text, encoding="latin1"):
    # protocol 2 writes each bytes object as _codecs.encode(<str>, 'latin1')
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode called with other than (str, 'latin1')")
    return codecs.encode(text, encoding)


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
}
for _module in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_module, "_reconstruct")] = np.zeros(1).__reduce__()[0]
    _ALLOWED[(_module, "scalar")] = np.float32(0).__reduce__()[0]


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"refers to {module}.{name}")
        return found


def read_state(path):
    """The ``{name: ndarray}`` of a ``.pdparams``/``.pdopt`` file (Fluid's pickle)."""
    from .io import _read
    data = _read(path, "load")
    try:
        state = _ArrayUnpickler(_io.BytesIO(data), encoding="latin1").load()
    except Exception as exc:  # noqa: BLE001 - any failure of a corrupt pickle
        raise InvalidArgument(expected(f"load: '{path}'", "contents",
                                       "a pickled dict of NumPy arrays (Fluid's .pdparams)",
                                       f"a file that does not unpickle so ({exc})")) from None
    if not isinstance(state, dict):
        raise InvalidArgument(expected(f"load: '{path}'", "contents", "a dict of name -> array",
                                       type(state).__name__))
    out = {}
    for name, value in state.items():
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            continue  # Paddle 2.x adds a name map ('StructuredToParameterName@@')
        if value.dtype.kind == "O":
            raise InvalidArgument(expected(f"load: '{path}'", f"array '{name}'",
                                           "numbers", "an object array"))
        out[str(name)] = value
    return out


def _state_bytes(state):
    buf = _io.BytesIO()
    pickle.dump(state, buf, protocol=2)
    return buf.getvalue()


def _array_of(scope, var, where):
    holder = scope.find_var(var.name)
    if holder is None or not holder.is_initialized():
        raise PreconditionNotMet(expected(where, f"variable '{var.name}'",
                                          "a value in the scope (run the startup program first)",
                                          "nothing"))
    return np.array(holder.value)


# --- save / load ------------------------------------------------------------------------
def save(program, model_path, scope=None):
    """Save ``program``'s parameters to ``<model_path>.pdparams``, its other persistables to
    ``<model_path>.pdopt`` and the program to ``<model_path>.pdmodel``.

    Example::

        fluid.save(fluid.default_main_program(), "./checkpoint/model")
        fluid.load(fluid.default_main_program(), "./checkpoint/model", exe)
    """
    from .io import _file_bytes, _scope_of, atomic_write, is_parameter
    if not isinstance(program, Program):
        raise InvalidType(expected("save", "program", "a Program", type(program).__name__))
    if not isinstance(model_path, str) or not os.path.basename(model_path):
        raise InvalidArgument(expected("save", "model_path", "dirname/filename (a file name "
                                       "prefix)", repr(model_path)))
    scope = _scope_of(scope)
    variables = list(program.list_vars())
    params = {v.name: _array_of(scope, v, "save") for v in variables if is_parameter(v)}
    opt = {v.name: _array_of(scope, v, "save") for v in variables if is_belong_to_optimizer(v)}
    payloads = [(model_path + ".pdparams", _state_bytes(params)),
                (model_path + ".pdopt", _state_bytes(opt)),
                (model_path + ".pdmodel", _file_bytes(program))]
    for path, data in payloads:  # all serialised before the first write
        atomic_write(path, data)


def _prefix(model_path):
    for suffix in _SUFFIXES:
        if model_path.endswith(suffix):
            return model_path[:-len(suffix)]
    return model_path


def load(program, model_path, executor=None, var_list=None, scope=None):
    """Load what :func:`save` wrote (``model_path`` may end in ``.pdparams``, ``.pdopt``
    or ``.pdmodel``) into the program's variables.

    Without ``<prefix>.pdparams``, ``model_path`` is what ``save_params``/
    ``save_persistables``/``save_vars`` wrote: a directory (its files that name variables
    of the program load), or one combined file (``var_list`` names its variables); then
    ``executor`` is required, and a load that fails raises ``RuntimeError``."""
    from .io import _scope_of, is_parameter
    if not isinstance(program, Program):
        raise InvalidType(expected("load", "program", "a Program", type(program).__name__))
    if executor is not None and not hasattr(executor, "run"):
        raise InvalidType(expected("load", "executor", "an Executor or None",
                                   type(executor).__name__))
    prefix = _prefix(model_path)
    scope = _scope_of(scope)
    if not os.path.exists(prefix + ".pdparams"):
        if os.path.isfile(prefix + LEGACY_SUFFIX):
            from .io import is_persistable, load_vars
            folder, name = os.path.split(prefix + LEGACY_SUFFIX)
            load_vars(executor, folder or ".", program, predicate=is_persistable,
                      filename=name, scope=scope)
            return
        _load_saved_vars(program, model_path, executor, var_list, scope)
        return
    variables = list(program.list_vars())
    params = [v for v in variables if is_parameter(v)]
    opts = [v for v in variables if is_belong_to_optimizer(v)]
    staged = _staged(params, read_state(prefix + ".pdparams"), prefix + ".pdparams")
    if opts:
        opt_path = prefix + ".pdopt"
        if not os.path.exists(opt_path):
            raise NotFound(expected("load", "optimizer file", f"'{opt_path}'",
                                    "nothing at that path"))
        staged += _staged(opts, read_state(opt_path), opt_path)
    _set_all(scope, staged, getattr(executor, "place", None))


def _staged(variables, state, path):
    """``[(var, array)]`` for ``variables`` from ``state``, each checked against its
    declaration; the first missing or mismatched one raises."""
    out = []
    for var in variables:
        if var.name not in state:
            raise NotFound(expected(f"load: '{path}'", f"variable '{var.name}'",
                                    "an entry in the file", "none"))
        array = state[var.name]
        _check_declared(var, array, f"load: variable '{var.name}' from '{path}'")
        out.append((var, array))
    return out


def _check_declared(var, array, where):
    shape = tuple(var.shape)
    if shape and (len(shape) != array.ndim
                  or any(d >= 0 and d != a for d, a in zip(shape, array.shape))):
        raise InvalidArgument(expected(where, "shape", list(shape), list(array.shape)))
    if dtype_name(var.dtype) != str(array.dtype):
        raise InvalidArgument(expected(where, "dtype", dtype_name(var.dtype), array.dtype))


def _set_all(scope, staged, place):
    """Set every staged value: tensors are made first (anything failing fails there), then
    only assignments remain."""
    from ..tensor.tensor import LoDTensor
    tensors = []
    for var, array in staged:
        holder = scope.find_var(var.name)
        old = holder.value if holder is not None else None
        if old is not None and not isinstance(old, LoDTensor):
            raise InvalidArgument(expected(f"load: variable '{var.name}'",
                                           "a scope variable holding a LoDTensor or nothing",
                                           f"one holding {type(old).__name__}"))
        where = place
        if where is None and old is not None and old.array is not None:
            where = old._place()
        tensor = LoDTensor()
        tensor.set(array, where)
        tensors.append((var.name, tensor))
    for name, tensor in tensors:
        holder = scope.find_var(name)
        (holder if holder is not None else scope.var(name)).value = tensor


def _load_saved_vars(program, model_path, executor, var_list, scope):
    """Fluid's fallback of ``load``: files of ``save_vars`` and its kin."""
    from .io import load_vars
    if executor is None:
        raise InvalidArgument(expected("load", "executor", "an Executor to load files saved "
                                       "by save_params/save_persistables/save_vars", "None"))
    if os.path.isdir(model_path):
        files = set()
        for root, _, names in os.walk(model_path):
            files.update(os.path.relpath(os.path.join(root, n), model_path).replace("\\", "/")
                         for n in names)
        chosen = [v for v in program.list_vars() if v.name in files]
        unused = files - {v.name for v in chosen}
        if unused:
            warnings.warn(f"load: variable files [ {' '.join(sorted(unused))} ] not used")
        dirname, filename = model_path, None
    elif os.path.isfile(model_path):
        if var_list is None:
            raise InvalidArgument(expected("load", "var_list", "the variables of a combined "
                                           "file saved by save_vars/save_persistables", "None"))
        names = {v.name for v in program.list_vars()}
        for var in var_list:
            if not isinstance(var, Variable):
                raise InvalidType(expected("load", "var_list", "Variables",
                                           type(var).__name__))
            if var.name not in names:
                raise PreconditionNotMet(expected("load", f"variable '{var.name}'",
                                                  "a variable of the program", "another"))
        chosen = list(var_list)
        dirname, filename = os.path.split(model_path)
    else:
        raise NotFound(expected("load", f"'{model_path}'", f"'{_prefix(model_path)}.pdparams', "
                                "a directory or a file", "nothing at that path"))
    try:
        load_vars(executor, dirname or ".", program, vars=chosen, filename=filename,
                  scope=scope)
    except FluidError as exc:  # Fluid raises RuntimeError for whatever fails here
        raise PreconditionNotMet(expected("load", f"'{model_path}'", "files saved by "
                                          "save_params/save_persistables/save_vars that fit "
                                          "the program", str(exc))) from exc


# --- program states ---------------------------------------------------------------------
def load_program_state(model_path, var_list=None):
    """``{name: ndarray}`` from what :func:`save` wrote (``.pdparams`` and ``.pdopt``
    merged), or from a directory of per-variable files, or from one combined file (then
    ``var_list`` names its variables, in the order ``save_vars`` sorted them)."""
    if not isinstance(model_path, str):
        raise InvalidType(expected("load_program_state", "model_path", "a path (str)",
                                   type(model_path).__name__))
    prefix = _prefix(model_path)
    if os.path.exists(prefix + ".pdparams"):
        state = read_state(prefix + ".pdparams")
        if os.path.exists(prefix + ".pdopt"):
            state.update(read_state(prefix + ".pdopt"))
        return state
    if var_list is not None:
        for var in var_list:
            if not isinstance(var, Variable):
                raise InvalidType(expected("load_program_state", "var_list", "Variables",
                                           f"{var!r} ({type(var).__name__})"))
    if os.path.isfile(prefix + LEGACY_SUFFIX) and not os.path.exists(model_path):
        if var_list is None:
            raise InvalidArgument(expected("load_program_state", "var_list", "the variables "
                                           f"of '{prefix}{LEGACY_SUFFIX}'", "None"))
        model_path = prefix + LEGACY_SUFFIX
    if os.path.isfile(model_path):
        if var_list is None:
            raise InvalidArgument(expected("load_program_state", "var_list", "the variables "
                                           "of a combined file (it holds no names)", "None"))
        folder, filename = os.path.split(model_path)
        return _read_vars(folder or ".", var_list, filename)
    if not os.path.isdir(model_path):
        raise NotFound(expected("load_program_state", f"'{model_path}'",
                                f"'{prefix}.pdparams', a directory or a file",
                                "nothing at that path"))
    if var_list is None:
        var_list = []
        for root, _, names in os.walk(model_path):
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(root, name), model_path).replace("\\", "/")
                # a saved model's program and combined files are not variables
                if not os.path.basename(rel).startswith(("__", ".")) \
                        and not rel.endswith((".pdmodel", ".pdiparams")):
                    var_list.append(rel)
    return _read_vars(model_path, var_list, None)


def _read_vars(dirname, var_list, filename):
    """``{name: ndarray}`` of ``var_list`` (Variables or names) read from per-variable files
    under ``dirname``, or from the combined ``filename``."""
    from .io import _read
    from ..proto import tensor_stream
    names = [v.name if isinstance(v, Variable) else v for v in var_list]
    try:
        if filename is None:
            return {n: tensor_stream.read_one(_read(os.path.join(dirname, n),
                                                    "load_program_state"),
                                              os.path.join(dirname, n))[0] for n in names}
        path = os.path.join(dirname, filename)
        records = tensor_stream.read_lod_tensors(_read(path, "load_program_state"), path)
        ordered = sorted(names)
        if len(records) != len(ordered):
            raise InvalidArgument(expected(f"load_program_state: '{path}'", "tensors",
                                           len(ordered), len(records)))
        return {n: r[0] for n, r in zip(ordered, records)}
    except FluidError as exc:  # Fluid raises RuntimeError for whatever fails here
        raise PreconditionNotMet(expected("load_program_state", f"'{dirname}'", "files saved "
                                          "by save_params/save_persistables/save_vars holding "
                                          "the variables asked for", str(exc))) from exc


def set_program_state(program, state_dict, scope=None):
    """Set the program's persistables from ``state_dict`` (``load_program_state``'s result).

    Each must already exist in the scope (run the startup program first) and match the
    value there in shape and dtype; names of ``state_dict`` the program does not have are
    reported in a warning. Nothing is set unless everything fits."""
    from .io import _scope_of, is_persistable
    if not isinstance(program, Program):
        raise InvalidType(expected("set_program_state", "program", "a Program",
                                   type(program).__name__))
    if not isinstance(state_dict, dict):
        raise InvalidType(expected("set_program_state", "state_dict", "a dict of name -> array",
                                   type(state_dict).__name__))
    scope = _scope_of(scope)
    staged, used = [], set()
    for var in program.list_vars():
        if not is_persistable(var):
            continue
        holder = scope.find_var(var.name)
        if holder is None:
            raise PreconditionNotMet(expected("set_program_state", f"variable '{var.name}'",
                                              "in the scope (run the startup program first)",
                                              "not there"))
        if var.name not in state_dict:
            continue
        new = np.asarray(state_dict[var.name])
        where = f"set_program_state: variable '{var.name}'"
        if holder.is_initialized():
            old = np.asarray(holder.value)
            if old.shape != new.shape:
                raise InvalidArgument(expected(where, "shape", list(old.shape), list(new.shape)))
            if old.dtype != new.dtype:
                raise InvalidArgument(expected(where, "dtype", old.dtype, new.dtype))
        staged.append((var, new))
        used.add(var.name)
    _set_all(scope, staged, None)
    unused = [name for name in state_dict if name not in used]
    if unused:
        warnings.warn(f"set_program_state: not set, no such persistable in the program: "
                      f"{' '.join(unused)}")
