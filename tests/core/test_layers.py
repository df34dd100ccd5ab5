"""The layers of the code import one way: values (tensor types, the memory arena, the
proto wire format) at the bottom, then the framework (compile time: programs and the op
table), the op definitions with their kernels, and the runtime (executor) and backward
above them. Read from the source, imports inside functions included, so a late import
cannot hide a cycle."""
import ast
import pathlib

import fluid_nb

PACKAGE = pathlib.Path(fluid_nb.__file__).parent

#: unit -> the units of fluid_nb it may import (a unit is a top-level module or package)
ALLOWED = {
    "errors": set(),
    "flags": {"errors"},
    "tensor": {"errors"},
    "memory": {"errors", "flags"},
    "proto": {"errors", "tensor"},
    "framework": {"errors", "flags", "tensor", "memory", "proto"},
    "ops": {"errors", "flags", "tensor", "memory", "proto", "framework"},
    "exec": {"errors", "flags", "tensor", "memory", "proto", "framework", "ops"},
    "backward": {"errors", "tensor", "framework", "ops"},
    # backward with checkpoints: attaches itself to backward's append_backward
    "recompute": {"errors", "tensor", "framework", "ops", "backward"},
    "native": {"errors", "flags", "tensor", "memory", "proto", "framework", "ops", "exec"},
    "onnx": {"errors", "flags", "tensor", "memory", "proto", "framework", "ops", "exec"},
    # the RPC runtime: its kernels drive the executor, attached to the op definitions
    "distributed": {"errors", "flags", "tensor", "memory", "proto", "framework", "ops",
                    "exec"},
}


def unit_of(path):
    first = path.relative_to(PACKAGE).parts[0]
    return first[:-3] if first.endswith(".py") else first


def imported_units(path):
    """(line, unit) of every fluid_nb unit the module at ``path`` imports."""
    module = ["fluid_nb", *path.relative_to(PACKAGE).with_suffix("").parts]
    package = module[:-1] if module[-1] != "__init__" else module[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                if node.module:
                    targets = [base + node.module.split(".")]
                else:
                    targets = [base + [alias.name] for alias in node.names]
            elif node.module and node.module.split(".")[0] == "fluid_nb":
                targets = [node.module.split(".")]
        elif isinstance(node, ast.Import):
            targets = [alias.name.split(".") for alias in node.names
                       if alias.name.split(".")[0] == "fluid_nb"]
        found += [(node.lineno, target[1]) for target in targets if len(target) > 1]
    return found


def test_each_layer_imports_only_the_layers_below_it():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(path)
        if unit not in ALLOWED:
            continue
        for line, target in imported_units(path):
            if target != unit and target not in ALLOWED[unit]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} ({unit}) imports {target}")
    assert wrong == []


def test_the_allowed_imports_have_no_cycle():
    order, seen = [], set()

    def visit(unit, path):
        assert unit not in path, f"cycle: {' -> '.join(path + [unit])}"
        if unit in seen:
            return
        for below in sorted(ALLOWED[unit]):
            visit(below, path + [unit])
        seen.add(unit)
        order.append(unit)

    for unit in ALLOWED:
        visit(unit, [])
    assert order.index("tensor") < order.index("framework") < order.index("ops") \
        < order.index("exec")


def test_the_reader_finds_imports_inside_functions(tmp_path):
    """The check would pass vacuously if the reader missed imports: it finds the late
    ones too (a module of the exec layer importing the ops layer inside a function)."""
    found = imported_units(PACKAGE / "exec" / "executor.py")
    assert (any(target == "ops" for _, target in found)
            and any(target == "memory" for _, target in found))
    late = [target for line, target in imported_units(PACKAGE / "framework" / "program.py")]
    assert "framework" in late  # program's late `from . import registry`


def test_kernels_that_drive_the_executor_are_attached_from_above():
    """The control-flow ops are defined without a runtime import; the executor's package
    gives them their kernels, and backward the rule for their sub-blocks."""
    from fluid_nb.exec import control_flow
    from fluid_nb.framework import registry
    assert registry.get("while").kernel_for("cpu") is control_flow._while
    assert registry.get("conditional_block_grad").kernel_for("gpu") is \
        control_flow._conditional_block_grad
    assert registry.get("while").sub_block_backward is fluid_nb.backward.sub_block_backward
    assert registry.get("read").kernel_for("cpu").__module__ == "fluid_nb.reader.loader"


def test_a_kernel_is_attached_once():
    import pytest
    from fluid_nb.framework import registry
    with pytest.raises(fluid_nb.errors.InvalidArgument, match="expected to have no kernel"):
        registry.attach_kernel("relu", lambda ctx, x: x)
    with pytest.raises(fluid_nb.errors.InvalidArgument, match="expected to have no rule"):
        registry.attach_sub_block_backward("while", lambda op, no_grad: None)
