"""The layers of the code import one way, bottom to top, as the ```layers table in
docs/ARCHITECTURE.md lists them: every import of every module under fluid_nb, in every
form Python has (absolute, relative, inside functions, importlib), goes to the module's own
layer or below. The reader itself is pinned on a small package built in a temporary folder,
with one upward import planted in each form."""
import ast
import importlib
import pathlib
import re
import sys
import textwrap

import pytest

from tests.core.layering import (LayerTableError, modules_outside_layers, package_imports,
                                 parse_layer_table, units_naming_nothing, upward_imports)

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPOSITORY / "fluid_nb"
ARCHITECTURE = REPOSITORY / "docs" / "ARCHITECTURE.md"


def fluid_nb_layers():
    return parse_layer_table(ARCHITECTURE.read_text())


def module_aliases():
    """alias -> real module name, for each module path of fluid_nb that names another
    module: Fluid's module paths (``fluid_nb.layers``, ``fluid_nb.executor``, ...), read
    from the ``FLUID_PATHS`` dict of fluid_paths.py (its finder loads them lazily), and the
    names the loaded package registers in ``sys.modules`` (fluid_nb.paddle's own)."""
    aliases = {}
    fluid_paths = PACKAGE / "fluid_paths.py"
    if fluid_paths.exists():
        for node in ast.parse(fluid_paths.read_text()).body:
            if isinstance(node, ast.Assign) and \
                    [getattr(t, "id", None) for t in node.targets] == ["FLUID_PATHS"]:
                aliases.update(ast.literal_eval(node.value))
    importlib.import_module("fluid_nb")
    aliases.update((name, module.__name__) for name, module in list(sys.modules.items())
                   if (name == "fluid_nb" or name.startswith("fluid_nb."))
                   and getattr(module, "__name__", name) != name)
    return aliases


# --- fluid_nb ---------------------------------------------------------------------------

def test_every_import_goes_to_its_own_layer_or_below():
    wrong = upward_imports(PACKAGE, "fluid_nb", fluid_nb_layers(), module_aliases())
    assert not wrong, "imports of a higher layer:\n" + "\n".join(wrong)


def test_every_module_is_in_a_layer():
    assert modules_outside_layers(PACKAGE, "fluid_nb", fluid_nb_layers()) == []


def test_every_unit_of_the_table_is_a_module_or_package():
    assert units_naming_nothing(PACKAGE, "fluid_nb", fluid_nb_layers()) == []


def test_kernels_that_drive_the_executor_are_attached_from_above():
    """The control-flow ops are defined without a runtime import; the executor's package
    gives them their kernels, and backward the rule for their sub-blocks."""
    importlib.import_module("fluid_nb")  # loads every layer: each attaches what it owns
    from fluid_nb.autodiff import backward
    from fluid_nb.exec import control_flow
    from fluid_nb.framework import registry
    assert registry.get("while").kernel_for("cpu") is control_flow._while
    assert registry.get("conditional_block_grad").kernel_for("gpu") is \
        control_flow._conditional_block_grad
    assert registry.get("while").sub_block_backward is backward.sub_block_backward
    assert registry.get("read").kernel_for("cpu").__module__ == "fluid_nb.api.reader.loader"


def test_a_kernel_is_attached_once():
    import fluid_nb
    from fluid_nb.framework import registry
    with pytest.raises(fluid_nb.errors.InvalidArgument, match="expected to have no kernel"):
        registry.attach_kernel("relu", lambda ctx, x: x)
    with pytest.raises(fluid_nb.errors.InvalidArgument, match="expected to have no rule"):
        registry.attach_sub_block_backward("while", lambda op, no_grad: None)


# --- the reader, on a package made for it ------------------------------------------------
#
# fake/__init__.py       layer high                   the namespace on top
# fake/base/__init__.py  layer low   (unit base)
# fake/base/core.py      layer low   (unit base)
# fake/base/extra.py     layer mid   (unit base.extra: a submodule above its package)
# fake/top/__init__.py   layer mid   (unit top)
# fake/top/view.py       layer mid   (unit top)
# ``fake.old`` is an alias of ``fake.top`` (as Fluid's module paths are of the real ones).

FAKE_TABLE = """
```layers
low   base
mid   top base.extra   # a comment
high  __init__
```
"""
FAKE_ALIASES = {"fake.old": "fake.top"}

CLEAN_TREE = {
    "__init__.py": """
        from . import base, top
        from .top import view
        """,
    "base/__init__.py": """
        from . import core
        """,
    "base/core.py": """
        VALUE = 1
        """,
    "base/extra.py": """
        from . import core
        from fake.base import core as same_core
        """,
    "top/__init__.py": """
        from ..base import core
        """,
    "top/view.py": """
        import importlib
        import fake.base.core
        from fake import base
        importlib.import_module("fake.base.core")
        importlib.import_module("..base", __package__)
        __import__("fake.base.core")


        def render():
            from .. import base
            return base
        """,
}

#: (importing module, imported module) of each import of the clean tree
CLEAN_IMPORTS = sorted([
    ("fake", "fake.base"), ("fake", "fake.top"), ("fake", "fake.top.view"),
    ("fake.base", "fake.base.core"),
    ("fake.base.extra", "fake.base.core"), ("fake.base.extra", "fake.base.core"),
    ("fake.top", "fake.base.core"),
    ("fake.top.view", "fake.base.core"), ("fake.top.view", "fake.base"),
    ("fake.top.view", "fake.base.core"), ("fake.top.view", "fake.base"),
    ("fake.top.view", "fake.base.core"), ("fake.top.view", "fake.base"),
])


def build_tree(folder, files):
    for name, text in files.items():
        path = folder / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return folder / "fake"


def check(root):
    return upward_imports(root, "fake", parse_layer_table(FAKE_TABLE), FAKE_ALIASES)


def test_a_clean_tree_reports_nothing_and_every_import_is_read(tmp_path):
    root = build_tree(tmp_path, CLEAN_TREE)
    imports, unresolved = package_imports(root, "fake", FAKE_ALIASES)
    assert sorted((imp.source, imp.target) for imp in imports) == CLEAN_IMPORTS
    assert unresolved == []
    assert check(root) == []


#: (form, file, code with the planted line marked, imported module, its unit); the file
#: is in layer low (unit base), the module it imports in layer mid
PLANTED = [
    ("absolute import", "base/plant.py", """
        import fake.top.view as v  # planted
        """, "fake.top.view", "top"),
    ("from-import of a name", "base/plant.py", """
        from fake.top.view import render  # planted
        """, "fake.top.view", "top"),
    ("from a package, import a submodule", "base/plant.py", """
        from fake.base import core, extra  # planted
        """, "fake.base.extra", "base.extra"),
    ("from the root package, import a subpackage", "base/plant.py", """
        from fake import base, top  # planted
        """, "fake.top", "top"),
    ("relative from ..x import y", "base/plant.py", """
        from ..top.view import render  # planted
        """, "fake.top.view", "top"),
    ("relative from ..x import submodule", "base/plant.py", """
        from ..top import view  # planted
        """, "fake.top.view", "top"),
    ("relative from . import x in a package's __init__", "base/__init__.py", """
        from . import core
        from . import extra  # planted
        """, "fake.base.extra", "base.extra"),
    ("relative from . import x in a module", "base/plant.py", """
        from . import core, extra  # planted
        """, "fake.base.extra", "base.extra"),
    ("import inside a function, an if and a try", "base/plant.py", """
        def later(flag):
            if flag:
                try:
                    import fake.top  # planted
                except ImportError:
                    pass
        """, "fake.top", "top"),
    ("import inside a method", "base/plant.py", """
        class Late:
            def run(self):
                from fake.top import view  # planted
                return view
        """, "fake.top.view", "top"),
    ("importlib.import_module, absolute", "base/plant.py", """
        import importlib
        importlib.import_module("fake.top.view")  # planted
        """, "fake.top.view", "top"),
    ("import_module relative to __package__", "base/plant.py", """
        from importlib import import_module
        import_module("..top", __package__)  # planted
        """, "fake.top", "top"),
    ("import_module relative to a literal package", "base/plant.py", """
        import importlib
        importlib.import_module(".view", package="fake.top")  # planted
        """, "fake.top.view", "top"),
    ("__import__", "base/plant.py", """
        __import__("fake.top.view")  # planted
        """, "fake.top.view", "top"),
    ("__import__ with a fromlist", "base/plant.py", """
        __import__("fake.base", fromlist=["extra"])  # planted
        """, "fake.base.extra", "base.extra"),
    ("an aliased module path", "base/plant.py", """
        from fake.old import view  # planted
        """, "fake.top.view", "top"),
    ("an aliased module imported from the root", "base/plant.py", """
        from fake import old  # planted
        """, "fake.top", "top"),
]


@pytest.mark.parametrize("form, file, code, target, unit", PLANTED,
                         ids=[case[0] for case in PLANTED])
def test_an_upward_import_of_each_form_is_reported(tmp_path, form, file, code, target, unit):
    lines = textwrap.dedent(code).lstrip("\n").splitlines()
    line = 1 + next(n for n, text in enumerate(lines) if text.endswith("# planted"))
    written = ast.unparse(ast.parse(lines[line - 1].split("#")[0].strip()).body[0])
    source = "fake.base" if file == "base/__init__.py" else "fake.base.plant"
    root = build_tree(tmp_path, {**CLEAN_TREE, file: "\n".join(lines) + "\n"})
    assert check(root) == [f"fake/{file}:{line}: `{written}`: {source} (layer low: base) "
                           f"imports {target} (layer mid: {unit})"]


def test_an_import_of_a_lower_layer_in_the_same_forms_is_not_reported(tmp_path):
    """The planted forms, turned downward: a module of layer mid importing layer low."""
    code = """
        import importlib
        import fake.base.core as c
        from fake.base.core import VALUE
        from fake.base import core
        from fake import base
        from ..base import core
        from . import view


        def later():
            import fake.base
            importlib.import_module("fake.base.core")
            importlib.import_module("..base", __package__)
            importlib.import_module(".core", package="fake.base")
            __import__("fake.base", fromlist=["core"])
        """
    assert check(build_tree(tmp_path, {**CLEAN_TREE, "top/plant.py": code})) == []


def test_a_relative_import_module_without_a_literal_package_is_reported(tmp_path):
    code = """
        import importlib


        def load(package):
            return importlib.import_module(".core", package)
        """
    wrong = check(build_tree(tmp_path, {**CLEAN_TREE, "base/plant.py": code}))
    assert len(wrong) == 1 and "plant.py:5" in wrong[0] and ".core" in wrong[0]


def test_an_import_of_a_module_outside_the_table_is_reported(tmp_path):
    root = build_tree(tmp_path, {**CLEAN_TREE, "stray.py": "VALUE = 1\n",
                                 "base/plant.py": "from .. import stray\n"})
    assert check(root) == ["fake/base/plant.py:1: `from .. import stray`: fake.base.plant "
                           "imports fake.stray, and fake.stray is in no layer"]


def test_a_module_outside_the_table_and_a_unit_naming_nothing_are_found(tmp_path):
    root = build_tree(tmp_path, {**CLEAN_TREE, "stray.py": "VALUE = 1\n"})
    layers = parse_layer_table(FAKE_TABLE.replace("base.extra", "base.extra gone"))
    assert modules_outside_layers(root, "fake", layers) == ["fake.stray"]
    assert units_naming_nothing(root, "fake", layers) == ["gone"]


def test_the_longest_unit_holds_a_module():
    layers = parse_layer_table(FAKE_TABLE)
    assert layers.unit_of("fake", "fake.base.extra") == "base.extra"
    assert layers.unit_of("fake", "fake.base.extras") == "base"
    assert layers.unit_of("fake", "fake") == "__init__"
    assert layers.unit_of("fake", "fake.nothing") is None
    assert layers.labels == ("low", "mid", "high")


@pytest.mark.parametrize("markdown, complaint", [
    ("no table here", "expected one ```layers block, but found 0"),
    (FAKE_TABLE + FAKE_TABLE, "expected one ```layers block, but found 2"),
    ("```layers\nlow base\nmid\n```\n", "layer 'mid' expected units after its label"),
    ("```layers\nlow base\nmid top base\n```\n", "unit 'base' is in two layers"),
])
def test_a_malformed_table_is_refused(markdown, complaint):
    with pytest.raises(LayerTableError, match=re.escape(complaint)):
        parse_layer_table(markdown)
