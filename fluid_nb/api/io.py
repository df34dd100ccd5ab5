"""Saving and loading programs and variables in Paddle's file formats.

- A program is ``ProgramDesc`` bytes: ``__model__`` (Fluid 1.x) or ``<prefix>.pdmodel``.
- Variables are LoDTensor stream records (:mod:`fluid_nb.proto.tensor_stream`): one file
  per variable, named after it, or one combined file (``__params__``, ``<prefix>.pdiparams``)
  holding the records in sorted-name order, as Paddle writes them.
- ``fluid.save``/``fluid.load`` and program states (``<prefix>.pdparams``, ``.pdopt``,
  ``.pdmodel``) are in :mod:`fluid_nb.api.io_state`.

Every file is written to a temporary name in its directory and renamed into place, so a
failure never leaves a half-written file. Loading never executes anything from a file.
"""
import os
import tempfile
import warnings

import numpy as np

from ..errors import InvalidArgument, InvalidType, NotFound, PreconditionNotMet, expected
from ..framework.prune import prune_with_input
from .io_state import (is_belong_to_optimizer, load, load_program_state, save,  # noqa: F401
                       set_program_state)
from ..tensor.dtypes import VarType, dtype_name
from ..framework.program import Parameter, Program, Variable, default_main_program
from ..proto import tensor_stream
from ..framework.codec import decode_program, encode_program
from ..proto.paddle_versions import OP_VERSIONS, PADDLE_VERSION
from .reader.decorator import (ComposeNotAligned, batch, buffered, cache, chain,  # noqa: F401
                               compose, firstn, map_readers, multiprocess_reader, shuffle,
                               xmap_readers)
from .reader.loader import DataLoader, PyReader, default_collate_fn  # noqa: F401

__all__ = ["save_vars", "load_vars", "save_params", "load_params", "save_persistables",
           "load_persistables", "save_inference_model", "load_inference_model",
           "is_persistable", "is_parameter", "prune_program", "load_program_state",
           "set_program_state", "save", "load"]

_NOT_SAVED = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.READER, VarType.RAW)


def is_persistable(var):
    return var.persistable and var.type not in _NOT_SAVED


def is_parameter(var):
    return isinstance(var, Parameter)


def atomic_write(path, data):
    """Write ``data`` to ``path`` via a temporary file and a rename."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(path, what):
    """The bytes of the file at ``path``, read once (a file changing later changes nothing);
    a typed error naming the path when there is no readable file there."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise NotFound(expected(what, f"'{path}'", "a file", "nothing at that path")) from None
    except IsADirectoryError:
        raise InvalidArgument(expected(what, f"'{path}'", "a file", "a directory")) from None
    except NotADirectoryError:
        raise InvalidArgument(expected(what, f"'{path}'", "a path through directories",
                                       "a file where a directory is named")) from None
    except OSError as exc:  # permissions, a symlink loop, a device that fails
        raise InvalidArgument(expected(what, f"'{path}'", "a readable file",
                                       exc.strerror or type(exc).__name__)) from None


def _folder(dirname, what):
    """``dirname`` if it is a directory; a typed error naming it otherwise."""
    if os.path.isdir(dirname):
        return dirname
    if os.path.lexists(dirname):
        raise InvalidArgument(expected(what, f"'{dirname}'", "a directory", "a file"))
    raise NotFound(expected(what, f"'{dirname}'", "a directory", "nothing at that path"))


def _scope_of(scope):
    from ..exec.scope import global_scope
    return global_scope() if scope is None else scope


def _tensor_bytes(var_name, scope):
    import io as _io
    holder = scope.find_var(var_name)
    if holder is None or not holder.is_initialized():
        raise PreconditionNotMet(f"save: variable '{var_name}' expected to hold a value in the "
                                 f"scope (run the startup program first), but it is empty")
    tensor = holder.value
    array = np.asarray(tensor)
    buf = _io.BytesIO()
    tensor_stream.write_lod_tensor(buf, array, tensor.lod() if hasattr(tensor, "lod") else [])
    return buf.getvalue()


def _get_valid_program(main_program, where="io"):
    """The Program behind ``main_program``: the default main program for None, a
    CompiledProgram's own program (with a warning, as Fluid gives)."""
    if main_program is None:
        return default_main_program()
    if not isinstance(main_program, Program) and hasattr(main_program, "_program"):
        inner = main_program._program
        if inner is None:
            raise InvalidType(expected(where, "main_program", "a Program, or a CompiledProgram "
                                       "made from one", "a CompiledProgram with no program"))
        warnings.warn("The input is a CompiledProgram, this is not recommended.")
        main_program = inner
    if not isinstance(main_program, Program):
        raise InvalidType(expected(where, "main_program", "a Program",
                                   type(main_program).__name__))
    return main_program


def _selected_vars(main_program, vars, predicate, where="save_vars"):
    program = _get_valid_program(main_program, where)
    if vars is None:
        vars = [v for v in program.list_vars() if predicate is None or predicate(v)]
    elif isinstance(vars, (str, Variable)) or not hasattr(vars, "__iter__"):
        raise InvalidType(expected(where, "vars", "a list of Variables", type(vars).__name__))
    selected = []
    for v in vars:
        if isinstance(v, str):
            v = program.global_block().var(v)
        elif not isinstance(v, Variable):
            raise InvalidType(expected(where, "vars", "a list of Variables",
                                       f"one holding {type(v).__name__}"))
        selected.append(v)
    return program, selected


# --- variables ---------------------------------------------------------------------------
def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    """Save ``vars`` (or those of ``main_program`` passing ``predicate``) under ``dirname``:
    one file each, or all in ``filename`` (sorted by name)."""
    scope = _scope_of(scope)
    _, selected = _selected_vars(main_program, vars, predicate, "save_vars")
    selected = [v for v in selected if v.type not in _NOT_SAVED]
    if filename is None:
        payloads = [(os.path.join(dirname, v.name), _tensor_bytes(v.name, scope))
                    for v in selected]
        for path, data in payloads:  # everything serialised before the first write
            atomic_write(path, data)
    else:
        data = b"".join(_tensor_bytes(v.name, scope)
                        for v in sorted(selected, key=lambda v: v.name))
        atomic_write(os.path.join(dirname, filename), data)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    """Load variables saved by :func:`save_vars` (or by Paddle) into ``scope``.

    A transaction: every file is read and checked (format, count, shapes, dtypes, LoD) and
    every value staged before the scope is touched, so a failed load leaves it as it was.
    """
    scope = _scope_of(scope)
    _, selected = _selected_vars(main_program, vars, predicate, "load_vars")
    selected = [v for v in selected if v.type not in _NOT_SAVED]
    if not selected:
        return
    folder = _folder(dirname, "load_vars")
    loaded, paths = {}, {}
    if filename is None:
        for var in selected:
            path = paths[var.name] = os.path.join(folder, var.name)
            # (views of the files' bytes: staging copies each onto the place)
            loaded[var.name] = tensor_stream.read_one(_read(path, "load_vars"), path,
                                                      copy=False)
    else:
        path = os.path.join(folder, filename)
        records = tensor_stream.read_lod_tensors(_read(path, "load_vars"), path, copy=False)
        ordered = sorted(selected, key=lambda v: v.name)
        if len(records) != len(ordered):
            raise InvalidArgument(expected(f"load_vars: '{path}'", "tensors",
                                           f"{len(ordered)} ({', '.join(v.name for v in ordered[:6])}...)",
                                           len(records)))
        loaded = {v.name: r for v, r in zip(ordered, records)}
        paths = {v.name: f"{path} (record {i})" for i, v in enumerate(ordered)}
    for var in selected:
        array, _ = loaded[var.name]
        where = f"load_vars: variable '{var.name}' from '{paths[var.name]}'"
        if var.shape and (len(var.shape) != array.ndim or any(
                d >= 0 and d != a for d, a in zip(var.shape, array.shape))):
            raise InvalidArgument(expected(where, "shape", list(var.shape), list(array.shape)))
        if var.type == VarType.LOD_TENSOR and dtype_name(var.dtype) != _dtype_text(array.dtype):
            raise InvalidArgument(expected(where, "dtype", dtype_name(var.dtype), array.dtype))
        holder = scope.find_local_var(var.name)
        if holder is not None and holder.value is not None \
                and type(holder.value).__name__ != "LoDTensor":
            raise InvalidArgument(expected(f"load_vars: variable '{var.name}'",
                                           "a scope variable holding a LoDTensor or nothing",
                                           f"one holding {type(holder.value).__name__}"))
    from ..tensor.tensor import LoDTensor
    place = getattr(executor, "place", None)
    staged = {}
    for var in selected:  # the same calls as below, on new tensors: anything failing fails here
        array, lod = loaded[var.name]
        tensor = LoDTensor()
        tensor.set(array, place)
        tensor.set_lod(lod)
        staged[var.name] = tensor
    for var in selected:
        tensor = scope.var(var.name).get_tensor()
        tensor.array = staged[var.name].array  # already copied onto the place
        tensor.set_lod(staged[var.name].lod())


def _dtype_text(dtype, _known={}):
    """``str(dtype)``, kept per dtype: NumPy words a dtype in Python, and a model's every
    parameter asks (a ResNet-110's 611 of them took 6 ms)."""
    text = _known.get(dtype)
    if text is None:
        text = _known[dtype] = str(dtype)
    return text


def get_program_parameter(program):
    """The program's parameters (Parameter variables), in creation order."""
    return [var for var in program.list_vars() if is_parameter(var)]


def get_program_persistable_vars(program):
    """The program's persistable variables, in creation order."""
    return [var for var in program.list_vars() if is_persistable(var)]


def get_parameter_value(para, executor):
    """The value (a NumPy array) of parameter ``para`` in the executor's global scope."""
    if not is_parameter(para):
        raise InvalidType(expected("get_parameter_value", "para", "a Parameter",
                                   type(para).__name__))
    program = Program()
    var = program.global_block().create_var(name=para.name, shape=para.shape,
                                            dtype=para.dtype, lod_level=para.lod_level,
                                            persistable=True)
    return executor.run(program, feed={}, fetch_list=[var])[0]


def get_parameter_value_by_name(name, executor, program=None):
    """The value of the parameter called ``name`` of ``program`` (default: the default main
    program)."""
    program = default_main_program() if program is None else program
    return get_parameter_value(program.global_block().var(name), executor)


def save_params(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


# --- inference models ------------------------------------------------------------------
def prune_program(program, target_names, feed_names=()):
    """The inference program of ``program`` for ``target_names`` fed ``feed_names``: its
    own feed and fetch ops gone, pruned as ``Program._prune_with_input`` prunes, then as
    Fluid's ``_inference_optimize``: ops up to the first ``read`` and reader variables
    removed, ``is_test`` set, parameters plain persistable variables."""
    source = program.clone()
    block = source.global_block()
    block.ops = [op for op in block.ops if op.type not in ("feed", "fetch")]
    for op in block.ops:
        op.is_target = False
    pruned = prune_with_input(source, list(feed_names), list(target_names))
    glob = pruned.global_block()
    reads = [i for i, op in enumerate(glob.ops) if op.type == "read"]
    if reads:
        del glob.ops[:reads[0] + 1]
    glob.vars = {n: v for n, v in glob.vars.items() if v.type != VarType.READER}
    for b in pruned.blocks:
        for op in b.ops:
            if "is_test" in op.attrs:
                op.attrs["is_test"] = True
    for var in glob.vars.values():  # inference programs carry no training flags
        if isinstance(var, Parameter):
            plain = object.__new__(Variable)
            plain.__dict__.update(var.__dict__)
            glob.vars[var.name] = plain
    pruned._is_test = True
    pruned._changed()
    return pruned


def _file_bytes(program):
    """``ProgramDesc`` bytes for a file: a program that does not say which Paddle format it
    holds (one built here) gets the version and op versions Paddle 2.6 writes; a decoded one
    keeps its own."""
    return encode_program(program, PADDLE_VERSION, OP_VERSIONS)


def _model_paths(dirname, model_filename, params_filename):
    if model_filename is None and params_filename is None and not os.path.isdir(dirname) \
            and os.path.exists(dirname + ".pdmodel"):
        # Paddle 2.x path prefix: <prefix>.pdmodel + <prefix>.pdiparams
        folder, prefix = os.path.split(dirname)
        return folder or ".", prefix + ".pdmodel", prefix + ".pdiparams"
    return dirname, model_filename or "__model__", params_filename


#: the name Fluid gives the ``scale`` op (by 1.0) it puts after each saved target, so a
#: target an inference pass would fuse away stays a variable of its own
SCALE_NAME = "save_infer_model/scale_{}"


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False, scope=None):
    """Save the part of ``main_program`` that computes ``target_vars`` from
    ``feeded_var_names``, with feed and fetch ops, and its persistables.

    As Fluid, each target is fetched through a ``scale`` by 1.0 named
    ``save_infer_model/scale_<i>`` (added to the saved copy, not to ``main_program``; a
    target that already is one, in a model saved before, is kept as it is). Returns the
    fetched names. The program goes to ``model_filename`` (``__model__`` by default), the
    persistables to one file each, or all to ``params_filename``. With
    ``export_for_deployment=False`` the whole program goes to
    ``<model_filename>.main_program`` instead; ``program_only`` saves no persistables.
    ``main_program`` may be a CompiledProgram (its program is saved).
    """
    where = "save_inference_model"
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    elif not isinstance(feeded_var_names, (list, tuple)) or (
            export_for_deployment and not all(isinstance(n, str) for n in feeded_var_names)):
        raise InvalidArgument(expected(where, "feeded_var_names", "a list of names (str)",
                                       repr(feeded_var_names)[:80]))
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    elif not isinstance(target_vars, (list, tuple)) or (export_for_deployment and not (
            target_vars and all(isinstance(v, Variable) for v in target_vars))):
        raise InvalidArgument(expected(where, "target_vars", "a non-empty list of Variables",
                                       repr(target_vars)[:80]))
    program = _get_valid_program(main_program, where)
    if any(op.type == "auc" for op in program.global_block().ops):
        warnings.warn("please ensure that you have set the auc states to zeros before saving "
                      "inference model")
    target_names = [v.name if isinstance(v, Variable) else v for v in target_vars]
    block = program.global_block()
    for name in list(feeded_var_names) + target_names:
        if block._find_var_recursive(name) is None:
            raise NotFound(expected(where, f"variable '{name}'", "a variable of the program",
                                    "a name it does not have"))
    model_name = os.path.basename(model_filename) if model_filename else "__model__"
    if params_filename is not None:
        params_filename = os.path.basename(params_filename)
    if not export_for_deployment:
        saved = program
        model_bytes = _file_bytes(program)
        model_name += ".main_program"
        fetch_names = target_names
    else:
        source = program.clone()
        fetch_names = _scaled_targets(source, target_names)
        saved = prune_program(source, fetch_names, feeded_var_names)
        for op in (op for b in saved.blocks for op in b.ops):
            if "op_device" in op.attrs:
                op.attrs["op_device"] = ""  # a deployed model runs where it is loaded
        glob = saved.global_block()
        glob.create_var(name="feed", type=VarType.FEED_MINIBATCH, persistable=True)
        glob.create_var(name="fetch", type=VarType.FETCH_LIST, persistable=True)
        for col, name in reversed(list(enumerate(feeded_var_names))):
            glob._add_op(0, "feed", {"X": ["feed"]}, {"Out": [name]}, {"col": col}, infer=False)
        for col, name in enumerate(fetch_names):
            glob._add_op(len(glob.ops), "fetch", {"X": [name]}, {"Out": ["fetch"]},
                         {"col": col}, infer=False)
        model_bytes = _file_bytes(saved)
    os.makedirs(dirname, exist_ok=True)
    atomic_write(os.path.join(dirname, model_name), model_bytes)
    if program_only:
        warnings.warn("save_inference_model specified the param `program_only` to True, It "
                      "will not save params of Program.")
        return fetch_names
    save_vars(executor, dirname, saved, predicate=is_persistable, filename=params_filename,
              scope=scope)
    return fetch_names


def _scaled_targets(program, target_names):
    """Append to ``program`` (a copy) the ``scale`` op of each target, as Fluid does; the
    names to fetch."""
    block = program.global_block()
    names = []
    for i, name in enumerate(target_names):
        if name.startswith(SCALE_NAME.format("")):
            names.append(name)
            continue
        var = block._find_var_recursive(name)
        out = SCALE_NAME.format(i)
        block.create_var(name=out, type=var.type, shape=var.shape, dtype=var.dtype,
                         lod_level=var.lod_level)
        block.append_op("scale", {"X": [name]}, {"Out": [out]},
                        {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
        names.append(out)
    return names


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None, scope=None):
    """Load a model saved by :func:`save_inference_model` or by Paddle (either layout).

    ``dirname`` may also be a Paddle 2.x path prefix (``model`` for ``model.pdmodel`` and
    ``model.pdiparams``). Returns ``[program, feed_target_names, fetch_targets]``.
    """
    folder, model_name, params_name = _model_paths(dirname, model_filename, params_filename)
    path = os.path.join(folder, model_name)
    program = decode_program(_read(path, "load_inference_model"), path)
    load_vars(executor, folder, program, predicate=is_persistable, filename=params_name,
              scope=scope)
    block = program.global_block()
    feeds = sorted(((op.attrs.get("col", 0), op.output("Out")[0]) for op in block.ops
                    if op.type == "feed"))
    fetches = sorted(((op.attrs.get("col", 0), op.input("X")[0]) for op in block.ops
                      if op.type == "fetch"))
    return [program, [n for _, n in feeds], [block.var(n) for _, n in fetches]]
