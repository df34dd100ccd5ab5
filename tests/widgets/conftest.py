import pytest

import fluid_nb as fluid
from fluid_nb.framework import unique_name


class SentMessages(list):
    """The messages a widget sent to its front end, as ``(method, content)`` pairs."""

    def custom(self):
        return [content for method, content in self if method == "custom"]

    def updates(self):
        return [content for method, content in self if method == "update"]


@pytest.fixture
def capture():
    """``capture(widget)`` records every message the widget sends from then on."""
    def attach(widget):
        sent = SentMessages()

        def send(data=None, buffers=None, **_):
            method = data.get("method")
            sent.append((method, data.get("content") if method == "custom" else data.get("state")))
        widget.comm.send = send
        return sent
    return attach


@pytest.fixture
def shell():
    """IPython's own shell with the extension loaded, in a fresh unique-name space."""
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.extension_manager.load_extension("fluid_nb")
    sh.user_ns["np"] = __import__("numpy")
    with unique_name.guard():
        yield sh


@pytest.fixture
def fresh_names():
    with unique_name.guard():
        yield


def scale_chain(n, program=None, startup=None):
    """A program of ``n`` scale ops in a chain after one data variable."""
    program = program if program is not None else fluid.Program()
    startup = startup if startup is not None else fluid.Program()
    with fluid.program_guard(program, startup):
        block = program.global_block()
        x = block.var("x") if "x" in block.vars else \
            fluid.layers.data("x", [4], dtype="float32")
        for _ in range(n):
            x = fluid.layers.scale(x, scale=1.0)
    return program, startup
