"""Every registered op is pinned by the op tables: a NumPy-reference case for each forward
op, and a finite-difference gradient case for each op that has a grad maker."""
import importlib
import types
import pathlib

from fluid_nb.ops import registry

# ops exercised elsewhere, with the test that pins them
PINNED_ELSEWHERE = {
    "feed": "tests/core/test_executor.py (every run feeds through it)",
    "fetch": "tests/core/test_executor.py (every run fetches through it)",
    "merge_selected_rows": "tests/ops/test_clip_ops.py (SelectedRows input)",
    "get_tensor_from_selected_rows": "tests/ops/test_clip_ops.py (SelectedRows input)",
}
# rank tables and tensor arrays cannot be fed by the op table: pinned, forward and gradient,
# by the hand-built programs of tests/ops/test_lod_ops.py
for _op in ["array_to_lod_tensor", "lod_tensor_to_array", "lod_array_length", "max_sequence_len",
            "read_from_array", "reorder_lod_tensor_by_rank", "shrink_rnn_memory",
            "write_to_array", "select_input", "select_output"]:
    PINNED_ELSEWHERE[_op] = "tests/ops/test_lod_ops.py (rank table or tensor array)"
for _op in ["print", "py_func", "load"]:
    PINNED_ELSEWHERE[_op] = "tests/api/test_print_py_func.py (side effects, Python, files)"
PINNED_ELSEWHERE["beam_search"] = "tests/ops/test_beam_search.py (Paddle's cases, two-level LoD)"
PINNED_ELSEWHERE["beam_search_decode"] = "tests/ops/test_beam_search.py (tensor arrays)"
PINNED_ELSEWHERE["load_combine"] = ("tests/ops/test_file_ops.py (its outputs' shapes come "
                                    "from the file)")
PINNED_ELSEWHERE["read"] = "tests/api/test_data_loader.py (a loader's batches, not a table)"
PINNED_ELSEWHERE["tensor_array_to_tensor"] = "tests/ops/test_tensor.py (a tensor array input)"
PINNED_ELSEWHERE["delete_var"] = ("tests/memory/test_memory_optimize.py (no outputs: the "
                                  "values it names are gone from the scope after it runs)")
for _op in ["send", "recv", "send_barrier", "fetch_barrier", "listen_and_serv",
            "distributed_lookup_table", "checkpoint_notify"]:
    PINNED_ELSEWHERE[_op] = ("tests/ops/test_distributed_ops.py (RPC ops: their definitions; "
                             "their kernels are the distributed runtime's)")
PINNED_ELSEWHERE["split_selected_rows"] = "tests/ops/test_distributed_ops.py (SelectedRows input)"
PINNED_ELSEWHERE["lookup_sparse_table"] = "tests/ops/test_sparse_ids.py (a SelectedRows table)"
PINNED_ELSEWHERE["pyramid_hash"] = ("tests/ops/test_pyramid_hash.py (its grad op updates W in "
                                   "place: no derivative to compare)")
for _op in ["while", "conditional_block"]:
    PINNED_ELSEWHERE[_op] = "tests/ops/test_control_flow.py (ops with sub-blocks)"


# ops whose backward op is not a derivative to compare with finite differences
NOT_A_DERIVATIVE = {
    "increment": "tests/training/test_counter_in_backward.py (a differentiable counter is "
                 "stepped back by the inverse increment, as Fluid's backward does)",
}


def _cases():
    cases = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        module = importlib.import_module(f"tests.ops.{path.stem}")
        cases.extend(getattr(module, "CASES", []))
    return cases


def _grad_op_types():
    """Types that only ever appear as some forward op's gradient."""
    types = set()
    for opdef in registry.all_ops().values():
        maker = opdef.grad
        if maker is not None and getattr(maker, "grad_type", None):
            types.add(maker.grad_type)
    return types | {t for t in registry.all_ops() if t.endswith("_grad") or t.endswith("_grad2")}


def _forward_ops():
    grads = _grad_op_types()
    return {t: d for t, d in registry.all_ops().items()
            if t not in grads and not t.startswith("test_")}


def test_every_forward_op_has_a_numpy_reference_case():
    tested = {c.op for c in _cases() if c.ref is not None or c.check is not None}
    missing = sorted(set(_forward_ops()) - tested - set(PINNED_ELSEWHERE))
    assert not missing, f"ops without an OpCase row: {missing}"


def test_every_differentiable_op_has_a_gradient_case():
    checked = {c.op for c in _cases() if c.grad}
    missing = sorted(t for t, d in _forward_ops().items()
                     if d.grad not in (None, registry.no_gradient) and t not in checked
                     and t not in PINNED_ELSEWHERE and t not in NOT_A_DERIVATIVE)
    assert not missing, f"ops with a grad maker but no gradient case: {missing}"


def _codes_reached(function, seen):
    """The code objects ``function`` runs: its own, its nested functions' and those of the
    module-level functions it names (followed through its module's globals)."""
    function = getattr(function, "func", function)  # (a functools.partial)
    code = getattr(function, "__code__", None)
    if code is None or code in seen:
        return seen
    seen.add(code)
    names, stack = getattr(function, "__globals__", {}), [code]
    while stack:
        for const in stack.pop().co_consts:
            if isinstance(const, types.CodeType) and const not in seen:
                seen.add(const)
                stack.append(const)
    for each in list(seen):
        for name in each.co_names:
            if isinstance(names.get(name), types.FunctionType):
                _codes_reached(names[name], seen)
    return seen


def test_every_op_whose_kernel_draws_random_numbers_is_stateful():
    """``stateful`` says an op is more than a function of its inputs: the executor and the
    compiled code run it even when nothing reads its outputs, and a live session never lets
    go of its outputs to compute them again (a second draw would differ from the first)."""
    registry.all_ops()
    drawing = set()
    for op_type, opdef in registry._OPS.items():
        for kernel in opdef.kernels.values():
            if any({"random_state", "RandomState", "default_rng"} & set(code.co_names)
                   for code in _codes_reached(kernel, set())):
                drawing.add(op_type)
    assert {"dropout", "nce", "uniform_random", "gaussian_random"} <= drawing  # (the walk)
    assert sorted(t for t in drawing if "stateful" not in registry._OPS[t].traits) == []
