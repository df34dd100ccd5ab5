"""The import layering of a package, read from its source.

A *layer table* lists the package's units bottom to top, one layer a line: a label, then
the units (module paths relative to the package; ``__init__`` is the package's own
``__init__.py``). A module belongs to the unit with the longest matching prefix, and may
import modules of its own layer and of the layers below it; an import of a higher layer is
a violation.

Every way Python has to import a module is read, wherever it stands (module level, inside
functions, methods, ``if``/``try`` blocks): ``import p.x.y [as z]``, ``from p.x import y``
(``y`` is the submodule ``p.x.y`` when there is one, else a name of ``p.x``), relative
imports at any level, and ``importlib.import_module`` / ``__import__`` called with literal
names. Module paths that are aliases of other modules (``aliases``: alias -> real name,
prefixes included) count as the real module.
"""
import ast
import dataclasses
import pathlib
import re

#: the unit that stands for the package's own ``__init__.py``
ROOT_UNIT = "__init__"

_TABLE_BLOCK = re.compile(r"^```layers[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


class LayerTableError(ValueError):
    """The layer table is missing or malformed."""


@dataclasses.dataclass(frozen=True)
class Layers:
    """The layers bottom to top: ``labels[i]`` is layer i's label, ``unit_rank`` maps each
    unit (a module path relative to the package) to its layer's index."""
    labels: tuple
    unit_rank: dict

    def unit_of(self, package, module):
        """The unit ``module`` (a dotted name) belongs to: the longest unit that is the
        module or a package above it; None when no unit covers it."""
        if module == package:
            return ROOT_UNIT if ROOT_UNIT in self.unit_rank else None
        if not module.startswith(package + "."):
            return None
        parts = module[len(package) + 1:].split(".")
        for end in range(len(parts), 0, -1):
            unit = ".".join(parts[:end])
            if unit in self.unit_rank and unit != ROOT_UNIT:
                return unit
        return None


def parse_layer_table(markdown):
    """The ```` ```layers ```` block of ``markdown`` as ``Layers``; each line is
    ``label unit unit ...``, bottom layer first; ``#`` starts a comment."""
    blocks = _TABLE_BLOCK.findall(markdown)
    if len(blocks) != 1:
        raise LayerTableError(f"expected one ```layers block, but found {len(blocks)}")
    labels, unit_rank = [], {}
    for line in blocks[0].splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) < 2:
            raise LayerTableError(f"layer {words[0]!r} expected units after its label")
        for unit in words[1:]:
            if unit in unit_rank:
                raise LayerTableError(f"unit {unit!r} is in two layers")
            unit_rank[unit] = len(labels)
        labels.append(words[0])
    return Layers(tuple(labels), unit_rank)


def package_modules(root, package):
    """{dotted module name: path} of every .py file under ``root`` (the package's folder)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


@dataclasses.dataclass(frozen=True)
class Import:
    """One import of the package's code: where it stands, how it reads, what it loads."""
    path: pathlib.Path
    line: int
    text: str
    source: str   # the importing module
    target: str   # the imported module, by its real name


class _Resolver:
    """Turns the names an import statement mentions into the module it loads."""

    def __init__(self, package, modules, aliases):
        self.package, self.modules, self.aliases = package, modules, aliases

    def ours(self, name):
        return name == self.package or name.startswith(self.package + ".")

    def real(self, name):
        """The real module path of ``name``: its longest aliased prefix replaced."""
        for _ in range(len(self.aliases) + 1):
            if name in self.modules:
                return name
            prefix = next((alias for alias in sorted(self.aliases, key=len, reverse=True)
                           if name == alias or name.startswith(alias + ".")), None)
            if prefix is None:
                return name
            name = self.aliases[prefix] + name[len(prefix):]
        raise LayerTableError(f"the aliases of {name!r} go round in a circle")

    def from_import(self, base, names):
        """The modules ``from base import names`` loads: ``base.name`` where that is a
        module, else ``base`` itself."""
        targets = []
        for name in names:
            candidate = self.real(f"{base}.{name}")
            targets.append(candidate if name != "*" and candidate in self.modules
                           else self.real(base))
        return targets

    @staticmethod
    def absolute(name, level, package):
        """``name`` (dots stripped) at ``level`` above ``package``, as importlib resolves
        it; None when the level leaves the top package."""
        bits = package.split(".") if package else []
        if level - 1 >= len(bits):
            return None
        base = ".".join(bits[:len(bits) - level + 1])
        return f"{base}.{name}" if name else base


def _literal_string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
        else None


def _call_argument(call, position, keyword):
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _called_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def module_imports(path, module, is_package, resolver):
    """Every import of the package's code in the module ``module`` (file ``path``):
    ``Import`` records, plus messages for dynamic imports that name the package's code
    relatively but cannot be resolved from literals."""
    here = module if is_package else module.rpartition(".")[0]
    found, unresolved = [], []

    def record(node, targets):
        text = ast.unparse(node).split("\n")[0]
        found.extend(Import(path, node.lineno, text, module, target)
                     for target in dict.fromkeys(targets) if resolver.ours(target))

    def package_value(node):
        """The package a relative dynamic import is resolved against, when literal."""
        if node is None:
            return None
        if isinstance(node, ast.Name) and node.id == "__package__":
            return here
        if isinstance(node, ast.Name) and node.id == "__name__":
            return module
        return _literal_string(node)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            record(node, [resolver.real(alias.name) for alias in node.names])
        elif isinstance(node, ast.ImportFrom):
            base = (resolver.absolute(node.module or "", node.level, here) if node.level
                    else node.module)
            if base is not None and resolver.ours(base):
                record(node, resolver.from_import(base, [a.name for a in node.names]))
        elif isinstance(node, ast.Call) and _called_name(node) == "import_module":
            name = _literal_string(_call_argument(node, 0, "name"))
            if name is None:
                continue
            if name.startswith("."):
                anchor = package_value(_call_argument(node, 1, "package"))
                level = len(name) - len(name.lstrip("."))
                name = None if anchor is None else \
                    resolver.absolute(name[level:], level, anchor)
                if name is None:
                    unresolved.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
                    continue
            record(node, [resolver.real(name)])
        elif isinstance(node, ast.Call) and _called_name(node) == "__import__":
            name = _literal_string(_call_argument(node, 0, "name"))
            level = _call_argument(node, 4, "level")
            level = level.value if isinstance(level, ast.Constant) else 0
            if name is None:
                continue
            if level:
                name = resolver.absolute(name, level, here)
                if name is None:
                    unresolved.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
                    continue
            fromlist = _call_argument(node, 3, "fromlist")
            names = [_literal_string(e) for e in getattr(fromlist, "elts", [])]
            if resolver.ours(name):
                record(node, resolver.from_import(name, names) if names and None not in names
                       else [resolver.real(name)])
    return found, unresolved


def package_imports(root, package, aliases=None):
    """(imports, unresolved) of every module under ``root``, the folder of ``package``."""
    modules = package_modules(root, package)
    resolver = _Resolver(package, modules, dict(aliases or {}))
    imports, unresolved = [], []
    for module, path in modules.items():
        found, odd = module_imports(path, module, path.name == "__init__.py", resolver)
        imports += found
        unresolved += odd
    return imports, unresolved


def upward_imports(root, package, layers, aliases=None):
    """Messages for each import of a higher layer than the importing module's, for each
    import of a module outside the table, and for each relative dynamic import that cannot
    be resolved; empty when the package keeps its layering."""
    imports, wrong = package_imports(root, package, aliases)
    for imp in imports:
        source_unit = layers.unit_of(package, imp.source)
        target_unit = layers.unit_of(package, imp.target)
        where = f"{imp.path.relative_to(root.parent)}:{imp.line}: `{imp.text}`"
        if source_unit is None or target_unit is None:
            wrong.append(f"{where}: {imp.source} imports {imp.target}, "
                         f"and {imp.source if source_unit is None else imp.target} "
                         f"is in no layer")
            continue
        source_rank = layers.unit_rank[source_unit]
        target_rank = layers.unit_rank[target_unit]
        if target_rank > source_rank:
            wrong.append(f"{where}: {imp.source} (layer {layers.labels[source_rank]}: "
                         f"{source_unit}) imports {imp.target} (layer "
                         f"{layers.labels[target_rank]}: {target_unit})")
    return wrong


def modules_outside_layers(root, package, layers):
    """The modules under ``root`` that no unit of ``layers`` covers."""
    return [module for module in package_modules(root, package)
            if layers.unit_of(package, module) is None]


def units_naming_nothing(root, package, layers):
    """The units of ``layers`` that name no module or package under ``root``."""
    modules = package_modules(root, package)
    return [unit for unit in layers.unit_rank
            if not any(layers.unit_of(package, module) == unit for module in modules)]
