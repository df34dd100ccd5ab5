"""Saving and loading programs and variables in Paddle's file formats.

- A program is ``ProgramDesc`` bytes: ``__model__`` (Fluid 1.x) or ``<prefix>.pdmodel``.
- Variables are LoDTensor stream records (:mod:`fluid_nb.proto.tensor_stream`): one file
  per variable, named after it, or one combined file (``__params__``, ``<prefix>.pdiparams``)
  holding the records in sorted-name order, as Paddle writes them.

Every file is written to a temporary name in its directory and renamed into place, so a
failure never leaves a half-written file. Loading never executes anything from a file.
"""
import os
import tempfile

import numpy as np

from .backward import OP_ROLE_OPTIMIZE
from .errors import InvalidArgument, NotFound, PreconditionNotMet, expected
from .framework.attrs import AttrType
from .tensor.dtypes import VarType, dtype_name
from .framework.program import Parameter, Program, Variable, default_main_program
from .proto import tensor_stream
from .framework.codec import decode_program, program_to_message
from .proto.paddle_versions import OP_VERSIONS, PADDLE_VERSION
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
    from .exec.scope import global_scope
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


def _selected_vars(main_program, vars, predicate):
    program = default_main_program() if main_program is None else main_program
    if vars is None:
        vars = [v for v in program.list_vars() if predicate is None or predicate(v)]
    return program, [v if isinstance(v, Variable) else program.global_block().var(v)
                     for v in vars]


# --- variables ---------------------------------------------------------------------------
def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None,
              scope=None):
    """Save ``vars`` (or those of ``main_program`` passing ``predicate``) under ``dirname``:
    one file each, or all in ``filename`` (sorted by name)."""
    scope = _scope_of(scope)
    _, selected = _selected_vars(main_program, vars, predicate)
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
    _, selected = _selected_vars(main_program, vars, predicate)
    selected = [v for v in selected if v.type not in _NOT_SAVED]
    if not selected:
        return
    folder = _folder(dirname, "load_vars")
    loaded, paths = {}, {}
    if filename is None:
        for var in selected:
            path = paths[var.name] = os.path.join(folder, var.name)
            loaded[var.name] = tensor_stream.read_one(_read(path, "load_vars"), path)
    else:
        path = os.path.join(folder, filename)
        records = tensor_stream.read_lod_tensors(_read(path, "load_vars"), path)
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
        if var.type == VarType.LOD_TENSOR and dtype_name(var.dtype) != str(array.dtype):
            raise InvalidArgument(expected(where, "dtype", dtype_name(var.dtype), array.dtype))
        holder = scope.find_local_var(var.name)
        if holder is not None and holder.value is not None \
                and type(holder.value).__name__ != "LoDTensor":
            raise InvalidArgument(expected(f"load_vars: variable '{var.name}'",
                                           "a scope variable holding a LoDTensor or nothing",
                                           f"one holding {type(holder.value).__name__}"))
    from .tensor.tensor import LoDTensor
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


def get_program_parameter(program):
    """The program's parameters (Parameter variables), in creation order."""
    return [var for var in program.list_vars() if is_parameter(var)]


def get_program_persistable_vars(program):
    """The program's persistable variables, in creation order."""
    return [var for var in program.list_vars() if is_persistable(var)]


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
    """A copy of ``program`` keeping only the global-block ops that ``target_names`` need
    (walking back from the targets, stopping at fed variables), in test mode.

    As Paddle's pruning does, only the sub-blocks of kept ops (and theirs) stay, renumbered
    in their old order; the variables no kept op uses leave the global block."""
    pruned = program.clone(for_test=True)
    block = pruned.global_block()
    needed = set(target_names)
    targets = set(target_names)
    feeds = set(feed_names)
    keep = []
    for op in reversed(block.ops):
        if op.type in ("feed", "fetch"):
            continue
        outputs = set(op.output_arg_names)
        # an optimizer op writes a parameter a target reads, but only a target it makes
        # itself keeps it (Paddle's rule): the inference model reads the parameter's value
        if op.attrs.get("op_role", 0) & OP_ROLE_OPTIMIZE and not targets & outputs:
            continue
        if needed & outputs:
            keep.append(op)
            needed |= set(op.input_arg_names) - feeds
            for sub in _sub_blocks(pruned, op):  # ops with sub-blocks read inside them too
                for sub_op in sub.ops:
                    needed |= set(sub_op.input_arg_names)
    block.ops = list(reversed(keep))
    _keep_blocks_of_kept_ops(pruned)
    used = set()
    for b in pruned.blocks:
        for op in b.ops:
            used |= set(op.input_arg_names) | set(op.output_arg_names)
    used |= feeds | set(target_names)
    block.vars = {n: v for n, v in block.vars.items() if n in used}
    for var in block.vars.values():  # inference programs carry no training flags
        if isinstance(var, Parameter):
            plain = object.__new__(Variable)
            plain.__dict__.update(var.__dict__)
            block.vars[var.name] = plain
    pruned._changed()
    return pruned


def _block_attrs(op):
    """``(name, [block indices])`` of each BLOCK or BLOCKS attribute of ``op``."""
    for name, value in op.attrs.items():
        kind = op.attr_type(name)
        if kind == AttrType.BLOCK:
            yield name, [value if isinstance(value, int) else value.idx]
        elif kind == AttrType.BLOCKS:
            yield name, [v if isinstance(v, int) else v.idx for v in value]


def _sub_blocks(program, op):
    """The blocks ``op`` runs, and the blocks their ops run, recursively."""
    found, todo = [], [op]
    while todo:
        for _, indices in _block_attrs(todo.pop()):
            for idx in indices:
                sub = program.block(idx)
                found.append(sub)
                todo.extend(sub.ops)
    return found


def _keep_blocks_of_kept_ops(program):
    """Drop every block no op of the global block reaches; renumber the rest."""
    kept = {0}
    for op in program.global_block().ops:
        kept |= {b.idx for b in _sub_blocks(program, op)}
    order = sorted(kept)
    new_idx = {old: new for new, old in enumerate(order)}
    blocks = [program.blocks[old] for old in order]
    for block in blocks:
        block.idx = new_idx[block.idx]
        block.parent_idx = new_idx.get(block.parent_idx, -1) if block.parent_idx >= 0 else -1
        block.forward_block_idx = new_idx.get(block.forward_block_idx, -1)
        for op in block.ops:
            for name, indices in _block_attrs(op):
                moved = [new_idx[i] for i in indices]
                op.attrs[name] = moved[0] if op.attr_type(name) == AttrType.BLOCK else moved
    program.blocks = blocks
    program.current_block_idx = 0


def _file_bytes(program):
    """``ProgramDesc`` bytes for a file: a program that does not say which Paddle format it
    holds (one built here) gets the version and op versions Paddle 2.6 writes; a decoded one
    keeps its own."""
    msg = program_to_message(program)
    if not msg.HasField("version"):
        msg.version.version = PADDLE_VERSION
    if not msg.HasField("op_version_map"):
        for name, version in OP_VERSIONS.items():
            pair = msg.op_version_map.pair.add()
            pair.op_name = name
            pair.op_version.version = version
    return msg.SerializeToString()


def _model_paths(dirname, model_filename, params_filename):
    if model_filename is None and params_filename is None and not os.path.isdir(dirname) \
            and os.path.exists(dirname + ".pdmodel"):
        # Paddle 2.x path prefix: <prefix>.pdmodel + <prefix>.pdiparams
        folder, prefix = os.path.split(dirname)
        return folder or ".", prefix + ".pdmodel", prefix + ".pdiparams"
    return dirname, model_filename or "__model__", params_filename


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False, scope=None):
    """Save the part of ``main_program`` that computes ``target_vars`` from
    ``feeded_var_names``, with feed and fetch ops, and its parameters.

    Returns the names of the fetched variables. The program goes to ``model_filename``
    (``__model__`` by default); parameters to one file each, or to ``params_filename``.
    """
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not isinstance(target_vars, (list, tuple)):
        target_vars = [target_vars]
    program = default_main_program() if main_program is None else main_program
    target_names = [v.name if isinstance(v, Variable) else v for v in target_vars]
    block = program.global_block()
    for name in list(feeded_var_names) + target_names:
        if block._find_var_recursive(name) is None:
            raise NotFound(f"save_inference_model: variable '{name}' expected in the program, "
                           f"but it is not there")
    pruned = prune_program(program, target_names, feeded_var_names)
    glob = pruned.global_block()
    glob.create_var(name="feed", type=VarType.FEED_MINIBATCH, persistable=True)
    glob.create_var(name="fetch", type=VarType.FETCH_LIST, persistable=True)
    for col, name in reversed(list(enumerate(feeded_var_names))):
        glob._add_op(0, "feed", {"X": ["feed"]}, {"Out": [name]}, {"col": col}, infer=False)
    for col, name in enumerate(target_names):
        glob._add_op(len(glob.ops), "fetch", {"X": [name]}, {"Out": ["fetch"]}, {"col": col},
                     infer=False)
    model_bytes = _file_bytes(pruned)
    if not program_only:
        save_persistables(executor, dirname, pruned, filename=params_filename) \
            if scope is None else save_vars(executor, dirname, pruned, predicate=is_persistable,
                                            filename=params_filename, scope=scope)
    atomic_write(os.path.join(dirname, model_filename or "__model__"), model_bytes)
    return target_names


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


# --- Paddle 2.x style state files ----------------------------------------------------------
def save(program, model_path):
    """``<model_path>.pdparams``-style save is pickle-based in Paddle; fluid_nb writes the same
    tensors as a combined LoDTensor stream (``<model_path>.pdtensors``) and the program as
    ``<model_path>.pdmodel``, never pickle."""
    folder, prefix = os.path.split(model_path)
    save_persistables(None, folder or ".", program, filename=prefix + ".pdtensors")
    atomic_write(model_path + ".pdmodel", _file_bytes(program))


def load(program, model_path, executor=None):
    folder, prefix = os.path.split(model_path)
    load_persistables(executor, folder or ".", program, filename=prefix + ".pdtensors")


def load_program_state(model_path, var_list=None):
    """Every tensor in a per-variable directory, as a name -> array dict."""
    state = {}
    for name in sorted(os.listdir(model_path)):
        path = os.path.join(model_path, name)
        if os.path.isfile(path) and not name.startswith(("__", ".")) \
                and not name.endswith((".pdmodel", ".pdiparams")):
            state[name] = tensor_stream.read_one(_read(path, "load_program_state"), path)[0]
    return state


def set_program_state(program, state_dict, scope=None):
    scope = _scope_of(scope)
    for var in program.list_vars():
        if is_persistable(var) and var.name in state_dict:
            scope.var(var.name).get_tensor().set(np.asarray(state_dict[var.name]))
