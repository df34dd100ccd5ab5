"""A parameter server's checkpoint: its shard of the training state, written whole or not at
all, and read back when the server starts again.

What a server saves is every persistable variable of its program that holds a tensor in its
scope: the parameters it owns, their optimizer state (moments, beta powers, the learning
rate and a schedule's step counter) and nothing the trainers send (gradients are not
persistable); and the number of optimize rounds it had run, ``round``. The tensors go into
one file, ``STATE``, as Paddle's LoDTensor records back to back (the format of a combined
parameter file, :mod:`fluid_nb.proto.tensor_stream`), in the order of the variables' names
in a ``MANIFEST`` beside it (JSON: the round and those names). Names are data in the
manifest, never paths, so a variable's name cannot place a file.

Layout, in a checkpoint directory ``D`` (``FLUID_NB_CHECKPOINT_DIR``)::

    D/round-00000040/   a whole checkpoint: its STATE, then its MANIFEST
    D/.partial-...      a checkpoint being written (ignored when reading)

A checkpoint is written into a ``.partial-`` folder, its ``MANIFEST`` last, then renamed to
``round-K`` in one step (a rename within a directory is atomic); only then are the older
ones removed. A process killed at any point leaves the previous whole checkpoint in place:
:func:`latest` reads only ``round-`` folders whose ``MANIFEST`` is whole and whose ``STATE``
holds one whole record per variable it names, the newest first.
"""
import json
import os
import re
import shutil
import tempfile

import numpy as np

from ..errors import InvalidArgument, expected
from ..proto.tensor_stream import read_lod_tensors, write_lod_tensor
from ..tensor.tensor import LoDTensor

MANIFEST = "MANIFEST"
STATE = "STATE"
#: the varname of a CheckpointNotify message (Paddle's CHECKPOINT_SAVE_MESSAGE); its
#: ``out_varname`` is the folder to save into
NOTIFY_NAME = "SAVE@CHECKPOINTNOTIFY"
#: a whole checkpoint's folder: the round, zero-padded so that names sort as rounds do
_ROUND = re.compile(r"round-(\d+)")
_FORMAT = "fluid_nb parameter server checkpoint 2"


def saved_variables(program, scope):
    """The variables of ``program`` a checkpoint holds: persistable, with a tensor in
    ``scope`` (sorted by name)."""
    chosen = []
    for var in program.list_vars():
        if not var.persistable:
            continue
        holder = scope.find_var(var.name)
        value = holder.value if holder is not None else None
        if isinstance(value, LoDTensor) and value.array is not None:
            chosen.append(var)
    return sorted(chosen, key=lambda v: v.name)


def save(directory, program, scope, round_):
    """Write the checkpoint of round ``round_`` into ``directory``; its folder's path.
    The older checkpoints there are removed once it is whole."""
    os.makedirs(directory, exist_ok=True)
    variables = saved_variables(program, scope)
    partial = tempfile.mkdtemp(prefix=".partial-", dir=directory)
    try:
        with open(os.path.join(partial, STATE), "wb") as f:
            for var in variables:
                tensor = scope.find_var(var.name).value
                write_lod_tensor(f, to_host_array(tensor.array), tensor.lod())
            f.flush()
            os.fsync(f.fileno())
        manifest = {"format": _FORMAT, "round": int(round_),
                    "variables": [v.name for v in variables]}
        with open(os.path.join(partial, MANIFEST), "w") as f:
            json.dump(manifest, f)
            f.flush()
            os.fsync(f.fileno())
        final = os.path.join(directory, f"round-{int(round_):08d}")
        if os.path.exists(final):  # the same round saved again (a notify after a save)
            shutil.rmtree(final)
        os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if path != final and (_ROUND.fullmatch(name) or name.startswith(".partial-")):
            shutil.rmtree(path, ignore_errors=True)
    return final


def to_host_array(array):
    """A server's tensors are host arrays; a device array (CuPy) is copied to the host."""
    get = getattr(array, "get", None)
    return get() if callable(get) and not isinstance(array, np.ndarray) else array


def _whole(folder):
    """``(manifest, records)`` of the checkpoint in ``folder`` if it is whole (a manifest of
    this format, and one readable record per variable it names), else None."""
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            manifest = json.load(f)
        with open(os.path.join(folder, STATE), "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT \
            or not isinstance(manifest.get("round"), int) \
            or not isinstance(manifest.get("variables"), list) \
            or not all(isinstance(n, str) for n in manifest["variables"]):
        return None
    try:
        records = read_lod_tensors(data, os.path.join(folder, STATE))
    except InvalidArgument:  # cut or corrupt
        return None
    if len(records) != len(manifest["variables"]):
        return None
    return manifest, records


def latest(directory):
    """``(folder, manifest, records)`` of the newest whole checkpoint in ``directory``, or
    None."""
    if not directory or not os.path.isdir(directory):
        return None
    rounds = sorted((int(m.group(1)), m.group(0)) for m in
                    map(_ROUND.fullmatch, os.listdir(directory)) if m)
    for _, name in reversed(rounds):
        folder = os.path.join(directory, name)
        whole = _whole(folder)
        if whole is not None:
            return (folder,) + whole
    return None


def restore(directory, program, scope):
    """Load the newest whole checkpoint of ``directory`` into ``scope``; its round, or None
    when there is none. The variables it names must be ``program``'s (the same server
    program that saved it): a checkpoint of another program is refused, scope untouched.
    Every tensor is read and checked before the scope gets any."""
    found = latest(directory)
    if found is None:
        return None
    folder, manifest, records = found
    block = program.global_block()
    unknown = [n for n in manifest["variables"] if not block.has_var(n)]
    if unknown:
        raise InvalidArgument(expected(
            f"checkpoint '{folder}'", "variables of this server's program",
            "the ones it saves", f"{unknown[:4]} that it does not declare"))
    tensors = [LoDTensor(array, lod) for array, lod in records]
    for name, tensor in zip(manifest["variables"], tensors):
        scope.var(name).value = tensor
    return manifest["round"]
