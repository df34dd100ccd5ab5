"""Scopes: a tree of name -> variable maps. Lookups climb to the parent; kids are dropped
together (``drop_kids``), as Fluid drops a run's local scope or a loop's step scopes."""
from ..errors import InvalidArgument, PreconditionNotMet
from ..tensor.lod_rank_table import LoDRankTable
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows


class ScopeVariable:
    """A holder in a scope; ``value`` is a LoDTensor, LoDTensorArray, SelectedRows, a list
    (feed/fetch), a Scope list (step scopes), or None before anything was written."""

    __slots__ = ("name", "value")

    def __init__(self, name, value=None):
        self.name = name
        self.value = value

    def get_tensor(self):
        """The variable's tensor as Fluid hands it out: a handle that stays bound to this
        variable, so one taken before ``Executor.run`` reads (and writes) what the run
        left there, as Fluid's tensors, updated in place, do."""
        self.current_tensor()
        return BoundTensor(self)

    def current_tensor(self):
        """The LoDTensor the variable holds now (an empty one is made when it holds none)."""
        value = self.value
        if value is None:
            value = self.value = LoDTensor()
        elif not isinstance(value, LoDTensor):
            raise InvalidArgument(f"variable '{self.name}': LoDTensor expected, but it holds "
                                  f"{type(value).__name__}")
        return value

    get_lod_tensor = get_tensor

    def get_lod_tensor_array(self):
        if self.value is None:
            self.value = LoDTensorArray()
        return self.value

    def get_selected_rows(self):
        if self.value is None:
            self.value = SelectedRows()
        return self.value

    def get_lod_rank_table(self):
        """The LoDRankTable the variable holds (a ``lod_rank_table`` op's output)."""
        if self.value is None:
            self.value = LoDRankTable()
        return self.value

    def get_fetch_list(self):
        """The list of tensors a ``fetch`` variable holds, one per fetch column."""
        if self.value is None:
            self.value = []
        return self.value

    # plain numbers and strings, as Paddle's scope variables hold them (set_int, get_float)
    def set_int(self, value):
        self.value = int(value)

    def set_float(self, value):
        self.value = float(value)

    def set_string(self, value):
        self.value = str(value)

    def is_int(self):
        return type(self.value) is int

    def is_float(self):
        return type(self.value) is float

    def get_int(self):
        return self._plain(int)

    def get_float(self):
        return self._plain(float)

    def get_string(self):
        return self._plain(str)

    def _plain(self, kind):
        if type(self.value) is not kind:
            raise PreconditionNotMet(f"variable '{self.name}': {kind.__name__} expected, but "
                                     f"it holds {type(self.value).__name__}")
        return self.value

    def is_initialized(self):
        value = self.value
        return value is not None and not (isinstance(value, LoDTensor) and value.array is None)

    def __repr__(self):
        return f"ScopeVariable({self.name}, {self.value!r})"


class BoundTensor(LoDTensor):
    """A LoDTensor handle bound to a scope variable: its data and LoD are those of the
    tensor the variable holds at each access (the executor stores a new tensor object per
    write), and writing through it (``set``, ``set_lod``) writes that tensor."""

    __slots__ = ("holder",)

    def __init__(self, holder):  # no data of its own: everything reads through the holder
        self.holder = holder

    @property
    def array(self):
        return self.holder.current_tensor().array

    @array.setter
    def array(self, value):
        self.holder.current_tensor().array = value

    @property
    def _lod(self):
        return self.holder.current_tensor()._lod

    @_lod.setter
    def _lod(self, value):
        self.holder.current_tensor()._lod = value

    def __repr__(self):
        return repr(self.holder.current_tensor())


class Scope:
    """``var(name)`` finds or creates in this scope; ``find_var(name)`` climbs to parents."""

    def __init__(self, parent=None):
        self.parent = parent
        self.vars = {}
        self.kids = []
        #: the executor's run plans bound to this scope, which go with it
        self.plans = {}

    def var(self, name):
        holder = self.vars.get(name)
        if holder is None:
            holder = self.vars[name] = ScopeVariable(name)
        return holder

    def find_var(self, name):
        scope = self
        while scope is not None:
            holder = scope.vars.get(name)
            if holder is not None:
                return holder
            scope = scope.parent
        return None

    def find_local_var(self, name):
        return self.vars.get(name)

    def new_scope(self):
        kid = Scope(self)
        self.kids.append(kid)
        return kid

    def drop_kids(self):
        self.kids.clear()

    def erase(self, names):
        for name in names:
            self.vars.pop(name, None)

    def local_var_names(self):
        return list(self.vars)

    def local_values(self):
        """name -> value of the variables this scope holds itself (not its parents')."""
        return {name: holder.value for name, holder in self.vars.items()}

    def get_tensor(self, name):
        holder = self.find_var(name)
        if holder is None:
            raise PreconditionNotMet(f"scope: variable '{name}' expected, but it is not in "
                                     f"this scope or its parents")
        return holder.get_tensor()

    def __repr__(self):
        return f"Scope({len(self.vars)} vars, {len(self.kids)} kids)"


class KeptScope(Scope):
    """A finished loop step's scope, made from its values (``BodyFrame.keep``). Its holders
    are made the first time ``vars`` is asked for: until then the step is a row, ``names``
    (a tuple, the same object for every step a frame keeps) and ``row`` (the values in that
    order, None where a name has none), which is all ``while_grad`` reads, so a step nobody
    else looks at costs one list instead of a holder per value. Once made, the holders are
    the scope's state and ``names`` and ``row`` are None. ``KeptScope(parent, values)``
    makes one from a dict."""

    def __init__(self, parent, values=None, names=(), row=()):
        self.parent = parent
        self.kids = []
        if values is not None:
            names, row = tuple(values), list(values.values())
        self.names = names
        self.row = row
        self._holders = None

    @property
    def plans(self):
        """The run plans bound to this scope, made when a run first binds to it (rare for a
        step scope, so a kept step costs no dict for them)."""
        try:
            return self._plans
        except AttributeError:
            self._plans = {}
            return self._plans

    @property
    def vars(self):
        holders = self._holders
        if holders is None:
            holders = self._holders = {name: ScopeVariable(name, value)
                                       for name, value in zip(self.names, self.row)
                                       if value is not None}
            self.names = self.row = None
        return holders

    def local_var_names(self):
        return list(self.local_values())

    def local_values(self):
        """name -> value, without making holders when none were made yet."""
        if self._holders is None:
            return {name: value for name, value in zip(self.names, self.row)
                    if value is not None}
        return super().local_values()


_global_scope = Scope()


def global_scope():
    return _global_scope


def switch_scope(scope):
    """Make ``scope`` the global scope; returns the one it replaces (to switch back)."""
    global _global_scope
    old, _global_scope = _global_scope, scope
    return old


_switch_scope = switch_scope  # Fluid's name (``fluid.executor._switch_scope``)


class scope_guard:
    """Inside the block, ``global_scope()`` is ``scope``."""

    def __init__(self, scope):
        self.scope = scope

    def __enter__(self):
        self.old = switch_scope(self.scope)
        return self.scope

    def __exit__(self, *exc):
        switch_scope(self.old)


def _fetch_var(name, scope=None, return_numpy=True):
    """``fluid.executor._fetch_var``: the value of variable ``name`` (a name or a Variable)
    in ``scope`` (the global scope by default), a NumPy array, or the LoDTensor with
    ``return_numpy=False``. Only persistables outlive a run."""
    import numpy as np
    from ..errors import InvalidType, NotFound, expected
    from ..framework.program import Variable
    if isinstance(name, Variable):
        name = name.name
    if not isinstance(name, str):
        raise InvalidType(expected("_fetch_var", "name", "a variable name (str)",
                                   type(name).__name__))
    scope = global_scope() if scope is None else scope
    holder = scope.find_var(name)
    if holder is None:
        raise NotFound(expected("_fetch_var", f"variable '{name}'", "in the scope (make it "
                                "persistable: var.persistable = True)", "not there"))
    tensor = holder.get_tensor()
    return np.array(tensor) if return_numpy else tensor
