"""The bad-input corpus's harness: one rule for every case, whatever its family.

A case is an action on some state (a program, a startup program, a scope, a live session).
It passes when the action either succeeds on input that is valid, or raises a typed
``fluid_nb.errors`` error whose message says what was expected and what was found, leaving
every piece of state exactly as it was. It fails when the action hangs (a time limit turns a
hang into a failure instead of a blocked suite), recurses, raises a plain Python or NumPy
error, is silently accepted where it must be refused, or leaves anything half done.

Families build their cases from deterministic seeds (``random.Random(seed)``), so a failing
case is reproduced by its id alone.
"""
import dataclasses
import hashlib
import signal
import threading
from contextlib import contextmanager
from typing import Callable, Optional, Sequence

import numpy as np

from fluid_nb.errors import FluidError

CASE_SECONDS = 5.0


class CaseHung(BaseException):
    """Raised into a case that ran past its time limit. A BaseException, so that no
    ``except Exception`` in the code under test can swallow it."""


@contextmanager
def time_limit(seconds=CASE_SECONDS):
    """Interrupt the block with :class:`CaseHung` after ``seconds`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise CaseHung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- state that a failure must leave as it was ------------------------------------------

def program_state(program):
    """Everything a program says: its bytes, and the Python-side names the bytes may not
    carry (a variable object left in a block's dict with no op is still a leftover)."""
    blocks = [(tuple(block.vars), tuple(op.type for op in block.ops)) for block in program.blocks]
    return program.serialize_to_string(), tuple(blocks)


def value_state(value):
    """A comparable summary of one scope value: type, dtype, shape, a digest of the data, LoD."""
    if value is None:
        return None
    array = getattr(value, "array", None)
    if array is not None or type(value).__name__ == "LoDTensor":
        if array is None:
            return ("LoDTensor", None)
        data = np.ascontiguousarray(np.asarray(array))
        return ("LoDTensor", str(data.dtype), data.shape,
                hashlib.sha1(data.tobytes()).hexdigest(), repr(value.lod()))
    if isinstance(value, list):
        return (type(value).__name__, tuple(value_state(item) for item in value))
    return (type(value).__name__, id(value))


def scope_state(scope):
    """Names and values of a scope and all its kids (a load must not add, drop or change any)."""
    own = tuple(sorted((name, value_state(value)) for name, value in scope.local_values().items()))
    return own, tuple(scope_state(kid) for kid in scope.kids)


def state_of(*programs, scope=None):
    """A snapshot function over the given programs and scope."""
    def snapshot():
        return (tuple(program_state(p) for p in programs),
                scope_state(scope) if scope is not None else None)
    return snapshot


# --- the rule -----------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One input. ``act`` performs the call under test. ``state`` returns what must be the
    same before and after a failure. ``must_fail``: True where the input is invalid and must
    be refused, False where it is valid and must work, None where either is right (a mutated
    file may still be a valid file). ``mentions``: words the message must contain (e.g.
    "byte" for file corruption). ``setup`` runs before ``state`` is taken."""

    family: str
    name: str
    act: Callable[[], object]
    state: Optional[Callable[[], object]] = None
    must_fail: Optional[bool] = True
    mentions: Sequence[str] = ()
    setup: Optional[Callable[[], object]] = None

    @property
    def id(self):
        return f"{self.family}:{self.name}"


def check(case, seconds=CASE_SECONDS):
    """Run one case by the corpus's rule; raise AssertionError saying what went wrong."""
    if case.setup is not None:
        case.setup()
    before = case.state() if case.state is not None else None
    try:
        with time_limit(seconds):
            case.act()
    except CaseHung as hang:
        raise AssertionError(f"{case.id}: hang ({hang})") from None
    except RecursionError as error:
        raise AssertionError(f"{case.id}: RecursionError: {str(error)[:200]}") from error
    except FluidError as error:
        message = str(error)
        assert case.must_fail is not False, f"{case.id}: valid input refused: {message}"
        assert "expected" in message, f"{case.id}: message does not say what was expected: {message}"
        for word in case.mentions:
            assert word in message, f"{case.id}: message does not mention {word!r}: {message}"
        if case.state is not None:
            after = case.state()
            assert after == before, f"{case.id}: state changed by a failed call ({message})"
        return "refused"
    except Exception as error:  # the corpus's point: no untyped error reaches the user
        raise AssertionError(f"{case.id}: untyped {type(error).__name__}: {str(error)[:300]}") from error
    assert case.must_fail is not True, f"{case.id}: invalid input silently accepted"
    return "accepted"
