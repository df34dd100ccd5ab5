"""Unique names as Fluid makes them: ``fc_0.w_0``, ``tmp_3``; ``guard()`` starts a fresh space."""
import contextlib


class UniqueNameGenerator:
    """Hands out ``<prefix>_<n>`` with a counter per prefix."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.ids = {}
        #: while a layer transaction is open, (key, counter before) per name handed out, so
        #: a failed layer can take its names back without copying every counter
        self.undo = None

    def __call__(self, key):
        n = self.ids.get(key, 0)
        if self.undo is not None:
            self.undo.append((key, n))
        self.ids[key] = n + 1
        return f"{self.prefix}{key}_{n}"

    def temporary(self, layer_type):
        """``<layer_type>_<n>.tmp_<m>``: a layer's output named as ``LayerHelper`` names
        it, ``self(self(layer_type) + ".tmp")`` in one call (one-op layers make one each)."""
        ids, undo = self.ids, self.undo
        n = ids.get(layer_type, 0)
        ids[layer_type] = n + 1
        key = f"{self.prefix}{layer_type}_{n}.tmp"
        m = ids.get(key, 0)
        ids[key] = m + 1
        if undo is not None:
            undo += ((layer_type, n), (key, m))
        return f"{self.prefix}{key}_{m}"

    def take_back_temporary(self, layer_type=None):
        """Undo the last ``temporary(layer_type)`` (``self("tmp")`` for None), no name
        handed out since: a one-op layer that failed outside a transaction, which logs
        nothing while it succeeds."""
        ids = self.ids
        if layer_type is None:
            self.take_back([("tmp", ids["tmp"] - 1)])
            return
        n = ids[layer_type] - 1
        key = f"{self.prefix}{layer_type}_{n}.tmp"
        self.take_back([(layer_type, n), (key, ids[key] - 1)])

    def take_back(self, undo):
        """Undo the names in ``undo`` (newest first)."""
        for key, n in reversed(undo):
            if n:
                self.ids[key] = n
            else:
                self.ids.pop(key, None)


_generator = UniqueNameGenerator()


def generate(key):
    """Next unique name for ``key``: ``generate('fc') -> 'fc_0'``, then ``'fc_1'``."""
    return _generator(key)


def generate_with_ignorable_key(key):
    return _generator(key)


def switch(new_generator=None):
    """Install ``new_generator`` (a fresh one if None); return the previous one."""
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Names made inside start from zero again (or from the given generator / prefix)."""
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
