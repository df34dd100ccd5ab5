# Written by tools/paddle18_tests/run.py next to a copy of Paddle's test files.
import os
import sys

sys.path.insert(0, {tools!r})
import paddle_alias  # noqa: E402

paddle_alias.install(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(session, config, items):
    # unittest's loader, which Paddle runs these files with, orders classes and methods by
    # name; tests that share the default program depend on that order
    items.sort(key=lambda item: (item.fspath.strpath, item.cls.__name__ if item.cls else "",
                                 item.name))


# Paddle's CI runs each test file in a process of its own, so a file starts with empty
# default programs, an empty global scope and fresh unique names. Here all files share one
# process: each file gets such a state of its own, made before it is imported (module-level
# code may build into the default program) and put back in place while its tests run.
_file_states = dict()
_current_file = [None]


def _fresh_state():
    from fluid_nb.framework import program, unique_name
    from fluid_nb.exec import scope
    return (program.Program(), program.Program(), scope.Scope(),
            unique_name.UniqueNameGenerator())


def _enter_state(path):
    from fluid_nb.framework import program, unique_name
    from fluid_nb.exec import scope
    if _current_file[0] == path:
        return
    state = _file_states.setdefault(path, _fresh_state())
    program.switch_main_program(state[0])
    program.switch_startup_program(state[1])
    scope._switch_scope(state[2])
    unique_name.switch(state[3])
    _current_file[0] = path


def pytest_collectstart(collector):
    import _pytest.python
    if isinstance(collector, _pytest.python.Module):
        _enter_state(str(collector.path))


def pytest_runtest_setup(item):
    _enter_state(str(item.path))
