"""Typed errors, one format: ``<where>: <what> expected <X>, but received <Y>``.

Each class mirrors a Paddle error kind, so code that catches Paddle's error categories reads
naturally here. All derive from :class:`FluidError` and from the closest Python built-in, so
``except ValueError`` keeps working for callers that do not know our types.
"""


class FluidError(Exception):
    """Base of every error fluid_nb raises on purpose."""


class InvalidArgument(FluidError, ValueError):
    """An argument (shape, dtype, attribute, LoD, file content) is not what the callee needs."""


class InvalidType(InvalidArgument, TypeError):
    """An argument of the wrong type (a string for a size, a list for a Variable). Fluid
    raises TypeError for these, and scripts catch it; it is an InvalidArgument as well."""


class InvalidAssertion(InvalidArgument, AssertionError):
    """An argument Fluid 1.8 refuses with a Python ``assert`` (reshape's shape with two -1s),
    so scripts catch AssertionError; it is an InvalidArgument as well."""


class NotFound(FluidError, KeyError):
    """A variable, op type, block or file that was named does not exist."""

    def __str__(self):  # KeyError would repr() the message; show it as written
        return str(self.args[0]) if self.args else ""


class OutOfRange(FluidError, IndexError):
    """An index (block, column, array slot, file offset) lies outside its valid range."""


class PreconditionNotMet(FluidError, RuntimeError):
    """The state is not ready for this call (an uninitialised variable, a missing run)."""


class Unimplemented(FluidError, NotImplementedError):
    """The request is well formed but fluid_nb has no rule or kernel for it."""


class ResourceExhausted(FluidError, MemoryError):
    """Memory or another bounded resource ran out."""


class Unavailable(FluidError, ConnectionError):
    """A service that was named (a parameter server's endpoint) cannot be reached, or
    stopped serving before it answered."""


class ExecutionTimeout(FluidError, TimeoutError):
    """A call or a wait ran past its deadline (an RPC, a training round's barrier)."""


def expected(where, what, want, got):
    """Format the project's one error message shape."""
    return f"{where}: {what} expected {want}, but received {got}"
