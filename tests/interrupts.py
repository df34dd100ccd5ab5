"""Ctrl-C as a terminal delivers it, whatever the test runner inherited.

A shell without job control (a CI script's ``cmd &``, ``nohup``) starts its background
commands with SIGINT ignored, and an ignored signal stays ignored in every child, across
exec. Under such a runner a test that presses Ctrl-C (a SIGINT to the process under test)
would test nothing but the runner's inheritance. Inside :func:`ctrl_c_as_in_a_terminal`,
SIGINT is Python's KeyboardInterrupt in this process, and the programs started meanwhile get
its default action (a handler, unlike an ignore, is reset when a child execs)."""
import signal
from contextlib import contextmanager


@contextmanager
def ctrl_c_as_in_a_terminal():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
