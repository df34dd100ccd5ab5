import pytest

from fluid_nb.tensor.place import is_compiled_with_cuda


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` (anywhere in the suite) run where CuPy sees a device and are
    skipped elsewhere."""
    if is_compiled_with_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to CuPy")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture
def ctrl_c():
    """SIGINT as a terminal's foreground job gets it, in this process and the programs the
    test starts (tests/interrupts.py says why a runner may have it ignored)."""
    from tests.interrupts import ctrl_c_as_in_a_terminal
    with ctrl_c_as_in_a_terminal():
        yield
