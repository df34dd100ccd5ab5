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
