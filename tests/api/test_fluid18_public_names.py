"""Fluid 1.8's public API: every name of the ``__all__`` of Fluid 1.8.5's ``fluid``,
``fluid.layers``, ``fluid.nets``, ``fluid.optimizer``, ``fluid.io``, ``fluid.framework`` and
``fluid.executor`` (tests/fixtures/fluid18_public_names.json, 510 names) exists in the
matching fluid_nb module, or is listed in NOT_PROVIDED with the reason it does not.

The list is kept true both ways: a name missing and not listed fails, and so does a listed
name that exists (take its line out). A few names exist only to refuse with a typed error
that says why (REFUSED); they do not count as working.

``python tests/api/test_fluid18_public_names.py`` prints the coverage and what is missing.
"""
import importlib
import json
import os

import pytest

NAMES_FILE = os.path.join(os.path.dirname(__file__), "..", "fixtures",
                          "fluid18_public_names.json")

DYGRAPH = "imperative (dygraph) mode: fluid_nb builds and runs static programs"
TRAINERS = ("Fluid's C++ Dataset trainers (train_from_dataset) are not built; fluid_nb "
            "trains through Executor.run and DataLoader")
NOT_YET = "not implemented yet"

#: (module, name) -> why fluid_nb does not have it; one line per name
NOT_PROVIDED = {
    ("fluid", "ComplexVariable"): DYGRAPH,
    ("fluid", "enable_dygraph"): DYGRAPH,
    ("fluid", "disable_dygraph"): DYGRAPH,
    ("fluid", "enable_imperative"): DYGRAPH,
    ("fluid", "disable_imperative"): DYGRAPH,
    ("fluid", "VarBase"): DYGRAPH,
    ("fluid.framework", "ComplexVariable"): DYGRAPH,
    ("fluid", "TrainerDesc"): TRAINERS,
    ("fluid", "MultiTrainer"): TRAINERS,
    ("fluid", "DistMultiTrainer"): TRAINERS,
    ("fluid", "PipelineTrainer"): TRAINERS,
}

#: (module, name) -> (why it only refuses, a call that must raise a typed fluid_nb error)
REFUSED = {
    ("fluid", "load_op_library"): (
        "custom C++ op libraries cannot load into Python op definitions",
        lambda fluid: fluid.load_op_library("custom_op.so")),
    ("fluid.framework", "load_op_library"): (
        "custom C++ op libraries cannot load into Python op definitions",
        lambda fluid: fluid.framework.load_op_library("custom_op.so")),
    ("fluid.optimizer", "DGCMomentumOptimizer"): (
        "deep gradient compression only acts between several trainers; fluid_nb runs one",
        lambda fluid: fluid.optimizer.DGCMomentumOptimizer(0.1, 0.9, rampup_begin_step=0)),
    ("fluid", "dygraph"): (
        DYGRAPH + "; the module loads so code that imports it does, and refuses when used",
        lambda fluid: fluid.dygraph.guard()),
    ("fluid.optimizer", "PipelineOptimizer"): (
        "pipeline stages need several devices with queues between them; fluid_nb runs one",
        lambda fluid: fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(0.1))),
}


def _public_names():
    with open(NAMES_FILE) as f:
        listed = json.load(f)
    return [(module.replace("paddle.fluid", "fluid"), name)
            for module, names in listed.items() for name in names]


def _module(module):
    return importlib.import_module(module.replace("fluid", "fluid_nb", 1))


def _has(module, name):
    """The name exists; a one-op layer (an activation, an elementwise op) also needs its
    op defined, or it would exist without working."""
    if not hasattr(_module(module), name):
        return False
    from fluid_nb.layers import ops
    from fluid_nb.ops import registry
    one_op = module == "fluid.layers" and name in ops._ACTIVATIONS + ops._ELEMENTWISE
    return not one_op or registry.find(name) is not None


def coverage():
    """The share of Fluid 1.8's public names that fluid_nb has and that work (the names
    that only refuse are not counted)."""
    names = _public_names()
    return sum(1 for key in names if _has(*key) and key not in REFUSED) / len(names)


def test_every_public_name_exists_or_is_listed_with_its_reason():
    missing = [key for key in _public_names() if not _has(*key) and key not in NOT_PROVIDED]
    assert not missing, f"names that neither exist nor are listed in NOT_PROVIDED: {missing}"


def test_every_listed_name_is_still_missing():
    present = [key for key in NOT_PROVIDED if _has(*key)]
    assert not present, f"these names exist now; take them off NOT_PROVIDED: {present}"


def test_the_lists_name_only_public_names():
    names = set(_public_names())
    stray = [key for key in list(NOT_PROVIDED) + list(REFUSED) if key not in names]
    assert not stray, f"not among Fluid 1.8's public names: {stray}"


@pytest.mark.parametrize("key", sorted(REFUSED), ids=lambda key: ".".join(key))
def test_a_refused_name_exists_and_raises_a_typed_error_saying_why(key):
    import fluid_nb
    from fluid_nb.errors import FluidError
    assert _has(*key)
    with pytest.raises(FluidError):
        REFUSED[key][1](fluid_nb)


def test_report_coverage(capsys):
    names = _public_names()
    with capsys.disabled():
        print(f"\nFluid 1.8 public names working in fluid_nb: {coverage():.1%} "
              f"({round(coverage() * len(names))} of {len(names)})")
    assert 0 < coverage() <= 1


def test_coverage_reaches_95_percent():
    assert coverage() >= 0.95, f"{coverage():.1%} of Fluid 1.8's public names work"


if __name__ == "__main__":
    print(f"coverage: {coverage():.1%}")
    for key, why in sorted(NOT_PROVIDED.items()):
        print(f"missing  {'.'.join(key)}: {why}")
    for key, (why, _) in sorted(REFUSED.items()):
        print(f"refused  {'.'.join(key)}: {why}")
