"""``fluid.HashName`` and ``fluid.RoundRobin``: how the distributed transpiler assigns
variables to parameter servers. ``dispatch(varlist)`` returns one endpoint per variable.

    RoundRobin(["a:1", "b:2"]).dispatch([w, b, v])   # ["a:1", "b:2", "a:1"]
    HashName(["a:1", "b:2"]).dispatch([w])           # hash(name) mod 2 picks the server

RoundRobin carries its position from one ``dispatch`` to the next until ``reset()``.
HashName hashes the variable's name with CRC-32: every trainer and server process must
pick the same server for a name, and Python's own ``hash`` of a string differs between
processes (Fluid's ``hash()`` agreed only when PYTHONHASHSEED was fixed)."""
import zlib

from ...errors import InvalidArgument, InvalidType, expected

__all__ = ["PSDispatcher", "HashName", "RoundRobin"]


def _var_name(var):
    """A variable's name: a Variable (``.name``), a string, or an object with ``name()``."""
    if isinstance(var, str):
        return var
    name = getattr(var, "name", None)
    name = name() if callable(name) else name
    if not isinstance(name, str):
        raise InvalidType(expected("dispatch", "each variable",
                                   "a Variable or a variable name", type(var).__name__))
    return name


def _names(varlist):
    """The names of ``varlist`` (a list or tuple), all checked before any is dispatched, so
    that a bad entry leaves a dispatcher's position where it was."""
    if not isinstance(varlist, (list, tuple)):
        raise InvalidType(expected("dispatch", "varlist", "a list of variables",
                                   type(varlist).__name__))
    return [_var_name(var) for var in varlist]


class PSDispatcher:
    """Assigns variables to the parameter-server ``pserver_endpoints`` ("ip:port")."""

    def __init__(self, pserver_endpoints):
        if not isinstance(pserver_endpoints, (list, tuple)) or not pserver_endpoints or \
                not all(isinstance(e, str) for e in pserver_endpoints):
            raise InvalidArgument(expected(type(self).__name__, "pserver_endpoints",
                                           "a non-empty list of 'ip:port' strings",
                                           repr(pserver_endpoints)))
        self._eps = list(pserver_endpoints)
        self._step = 0

    @property
    def eps(self):
        return self._eps

    def reset(self):
        """Start again from the first endpoint."""
        self._step = 0

    def dispatch(self, varlist):
        raise NotImplementedError  # each dispatcher defines its rule


class HashName(PSDispatcher):
    """endpoint = eps[crc32(name) mod len(eps)]: a name always lands on the same server."""

    def dispatch(self, varlist):
        # surrogatepass: any str names a variable, even one no UTF-8 text can spell
        return [self._eps[zlib.crc32(name.encode("utf-8", "surrogatepass")) % len(self._eps)]
                for name in _names(varlist)]


class RoundRobin(PSDispatcher):
    """The endpoints in turn, continuing where the previous ``dispatch`` stopped."""

    def dispatch(self, varlist):
        endpoints = []
        for _ in _names(varlist):
            endpoints.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return endpoints
