import itertools

import pytest

import fluid_nb as fluid
from fluid_nb.framework import unique_name

_count = itertools.count()


@pytest.fixture
def session_name():
    """A fresh live session name per test, in a fresh unique-name space."""
    with unique_name.guard():
        yield f"test_{next(_count)}"


@pytest.fixture
def shell():
    """IPython's own shell with the extension loaded."""
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    module = "fluid_nb" if hasattr(fluid, "load_ipython_extension") else "fluid_nb.notebook"
    sh.extension_manager.load_extension(module)
    sh.user_ns["np"] = __import__("numpy")
    with unique_name.guard():
        yield sh
