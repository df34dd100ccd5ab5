"""Fixtures of the API tests."""
import pytest

import fluid_nb as fluid


@pytest.fixture
def programs():
    """Fresh main and startup programs (and unique names) that layers build into."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        yield main, startup
