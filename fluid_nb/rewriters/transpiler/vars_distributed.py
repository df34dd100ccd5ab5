"""Where each variable of a transpiled program lives on the parameter servers.

``transpile`` records one entry per piece a server holds: a parameter block ("Param"), a
table the trainer reads on the servers ("RemotePrefetch"), and each optimizer state variable
("Optimizer", cut like its parameter when it has the parameter's shape). The trainer and
server programs carry the record as ``program._parameters_on_pservers`` (Fluid 1.8's name),
which saving and loading a cut model read: piece ``slice`` of ``origin`` starts ``offset``
elements into it.
"""


class VarStruct:
    """The fields of a variable a record keeps (a snapshot, not the program's variable)."""

    __slots__ = ("name", "shape", "dtype", "type", "lod_level", "persistable")

    def __init__(self, name, shape, dtype, type, lod_level, persistable):
        self.name, self.shape, self.dtype, self.type = name, shape, dtype, type
        self.lod_level, self.persistable = lod_level, persistable

    @classmethod
    def of(cls, var):
        if isinstance(var, cls):
            return var
        return cls(var.name, tuple(var.shape), var.dtype, var.type,
                   getattr(var, "lod_level", 0), var.persistable)


class VarDistributed:
    """Piece ``slice`` of ``origin`` on server ``endpoint``: block ``block_id``, ``offset``
    elements from the start of ``origin`` (``is_slice`` False: the whole variable)."""

    def __init__(self, origin_var, slice_var, is_slice=None, block_id=None, offset=None,
                 vtype=None, endpoint=None):
        self.origin = VarStruct.of(origin_var)
        self.slice = VarStruct.of(slice_var)
        self.is_slice, self.block_id, self.offset = is_slice, block_id, offset
        self.vtype, self.endpoint = vtype, endpoint

    def __str__(self):
        return (f"{self.origin.name}{list(self.origin.shape)} -> {self.slice.name}"
                f"{list(self.slice.shape)} block {self.block_id} offset {self.offset} "
                f"{self.vtype} on {self.endpoint}")

    __repr__ = __str__


class VarsDistributed:
    """Every piece of every variable held by the servers, in the order recorded."""

    def __init__(self):
        self.distributed_vars = []

    def add_distributed_var(self, origin_var, slice_var, is_slice=None, block_id=None,
                            offset=None, vtype=None, endpoint=None):
        self.distributed_vars.append(VarDistributed(origin_var, slice_var, is_slice,
                                                    block_id, offset, vtype, endpoint))

    def get_distributed_var_by_slice(self, var_name):
        return next((v for v in self.distributed_vars if v.slice.name == var_name), None)

    def get_distributed_var_by_origin_and_ep(self, origin_var_name, endpoint):
        return next((v for v in self.distributed_vars
                     if v.origin.name == origin_var_name and v.endpoint == endpoint), None)

    def get_distributed_vars_by_vtypes(self, vtypes, groupby=False):
        """The pieces whose vtype is in ``vtypes``; with ``groupby``, {origin name: pieces}."""
        chosen = [v for v in self.distributed_vars if v.vtype in vtypes]
        if not groupby:
            return chosen
        grouped = {}
        for v in chosen:
            grouped.setdefault(v.origin.name, []).append(v)
        return grouped

    def get_distributed_vars_by_ep(self, endpoint, vtype=None):
        return [v for v in self.distributed_vars
                if v.endpoint == endpoint and (not vtype or v.vtype == vtype)]

    def overview(self):
        return "\n".join(str(v) for v in self.distributed_vars)
