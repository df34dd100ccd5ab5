"""Shared helpers for the PaddlePaddle fixture generators.

These scripts are run with a real PaddlePaddle 2.6.2 install (see README.md in
this directory) and write reference data under ``tests/fixtures/paddle/``.
They only use Paddle's legacy static-graph API.
"""

import hashlib
import json
import os
import shutil
import sys

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE_ROOT = os.path.join(REPO_ROOT, "tests", "fixtures", "paddle")


def ensure_hash_seed():
    """Re-exec the current script with PYTHONHASHSEED=0.

    Paddle builds some op input lists from Python sets (e.g. the X inputs of
    the ``while`` op), so string-hash randomisation would make the serialized
    programs differ between runs.
    """
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def import_paddle():
    """Import paddle quietly and switch to static-graph mode."""
    ensure_hash_seed()
    os.environ.setdefault("GLOG_minloglevel", "2")
    os.environ.setdefault("FLAGS_call_stack_level", "0")
    import paddle

    if not paddle.__version__.startswith("2.6."):
        print(
            "warning: fixtures were designed for paddlepaddle 2.6.2, running %s"
            % paddle.__version__,
            file=sys.stderr,
        )
    paddle.enable_static()
    return paddle


def fixture_dir(*parts, clean=False):
    path = os.path.join(FIXTURE_ROOT, *parts)
    if clean and os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    return path


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=False)
        f.write("\n")


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def sha256_of_array(arr):
    """sha256 hex digest of the raw C-order bytes of ``arr``."""
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def dtype_name(paddle_dtype):
    """'paddle.float32' -> 'float32'."""
    return str(paddle_dtype).replace("paddle.", "")


def var_type_name(var):
    return str(var.type).split(".")[-1]


def op_types(block):
    return [op.type for op in block.ops]


def all_op_types(program):
    """{block_idx: [op types]} for every block of ``program``."""
    return {str(b.idx): op_types(b) for b in program.blocks}


def persistable_vars(program):
    """Sorted list of {name, shape, dtype, type, is_parameter} for persistables."""
    import paddle

    out = []
    for v in program.list_vars():
        if not v.persistable:
            continue
        entry = {
            "name": v.name,
            "type": var_type_name(v),
            "is_parameter": isinstance(v, paddle.base.framework.Parameter),
        }
        if var_type_name(v) == "LOD_TENSOR":
            entry["shape"] = list(v.shape)
            entry["dtype"] = dtype_name(v.dtype)
        out.append(entry)
    return sorted(out, key=lambda e: e["name"])


def parameter_list(program):
    """Sorted [{name, shape, dtype}] of the Parameters of ``program``."""
    return [
        {"name": p.name, "shape": list(p.shape), "dtype": dtype_name(p.dtype)}
        for p in sorted(program.all_parameters(), key=lambda p: p.name)
    ]


def scope_array(scope, name):
    return np.array(scope.find_var(name).get_tensor())


def set_scope_array(scope, name, value, place):
    scope.find_var(name).get_tensor().set(value, place)


def fresh_programs(seed):
    """New (main, startup) pair with a fixed random seed."""
    import paddle

    main = paddle.static.Program()
    startup = paddle.static.Program()
    main.random_seed = seed
    startup.random_seed = seed
    return main, startup


def dir_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total
