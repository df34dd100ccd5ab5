"""``fluid.DistributeTranspiler``: one training program made into a trainer program and one
program per parameter server, as Fluid 1.8's transpiler makes them.

The trainer keeps forward and backward. After the op that computes a gradient it ``send``s
the gradient (cut into row blocks by ``split_byref``, or ``split_selected_rows`` for a
sparse one, when its parameter is cut) to the servers that hold the blocks; a
``send_barrier`` ends the step's sends (synchronous mode); ``recv`` fetches each parameter's
blocks back, ``fetch_barrier`` ends the fetches and ``concat`` joins cut parameters. Its
optimizer and learning-rate ops are gone: each server's ``listen_and_serv`` runs them, one
``optimize_blocks`` block per parameter block it holds (the learning-rate schedule in a
block of its own first), after summing and averaging the trainers' gradients. Blocks are
placed on the servers by ``config.split_method`` (RoundRobin by default). The trainer
program (and each server's) records where every piece lives in ``_parameters_on_pservers``
(see :mod:`.vars_distributed`).

Example::

    t = fluid.DistributeTranspiler()
    t.transpile(trainer_id=0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
    trainer = t.get_trainer_program(wait_port=False)      # run on each trainer
    server, server_startup = t.get_pserver_programs("127.0.0.1:6170")   # on that server

As in Fluid, ``transpile`` rewrites the given main and startup programs in place (they
become the trainer's); the server programs are new programs.
"""
import collections
import copy
import math
import re
import socket
import time

import numpy as np

from ...autodiff.backward import OP_ROLE_LR_SCHED, OP_ROLE_OPTIMIZE
from ...errors import (ExecutionTimeout, InvalidArgument, InvalidType, OutOfRange,
                      PreconditionNotMet, Unimplemented, expected)
from ...framework.program import (Parameter, Program, default_main_program,
                                 default_startup_program)
from ...api.initializer import ConstantInitializer
from ...ops.distributed import ASYNC, GEO, HALF_ASYNC, SYNC
from .ps_dispatcher import PSDispatcher, RoundRobin
from ...tensor.dtypes import VarType
from . import pserver_programs, rollback
from .slicing import same_or_split_var, slice_variable
from .vars_distributed import VarsDistributed, VarStruct

#: Paddle's op roles of the ops the transpiler adds
OP_ROLE_RPC, OP_ROLE_DIST = 4, 8
#: the prefix of the dummy variables that only order the RPC ops (Paddle's kControlDepVarName)
CONTROL_VAR_PREFIX = "__control_var"
#: the op types whose table the trainer looks up on the servers when ``remote_prefetch``
LOOKUP_TABLE_TYPES = ("lookup_table", "lookup_table_v2")
#: how long ``get_trainer_program(wait_port=True)`` waits for the servers' ports, seconds
WAIT_PORT_TIMEOUT = 120.0

_WHERE = "DistributeTranspiler"
#: a host name or IPv4 address
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*")


class DistributedMode:
    """The ``distributed_mode`` attribute of the servers' ops: how trainers' updates meet."""
    SYNC, ASYNC, HALF_ASYNC, GEO = SYNC, ASYNC, HALF_ASYNC, GEO


class DistributeTranspilerConfig:
    """How to transpile (Fluid 1.8's fields and defaults).

    ``slice_var_up``: cut large parameters into blocks across the servers (True);
    ``split_method``: the dispatcher class placing blocks, RoundRobin or HashName (None:
    RoundRobin); ``min_block_size``: the fewest elements of a block (8192, the least allowed);
    ``sync_mode`` / ``runtime_split_send_recv`` / ``half_async`` / ``completely_not_async``:
    the servers' mode (sync; async when runtime_split_send_recv; half-async otherwise).
    ``mode`` other than "pserver" (nccl2, collective) and ``enable_dc_asgd`` are not built.
    """

    slice_var_up = True
    split_method = None
    min_block_size = 8192
    enable_dc_asgd = False
    mode = "pserver"
    print_log = False
    wait_port = True
    half_async = False
    completely_not_async = False
    geo_sgd_mode = False
    geo_sgd_need_push_nums = 100
    nccl_comm_num = 1
    use_hierarchical_allreduce = False
    hierarchical_allreduce_inter_nranks = 0
    collective_mode = None

    def __init__(self):
        self._runtime_split_send_recv = False
        self._sync_mode = True

    @property
    def runtime_split_send_recv(self):
        return self._runtime_split_send_recv

    @runtime_split_send_recv.setter
    def runtime_split_send_recv(self, value):
        if value is None or (value and self._sync_mode):
            raise InvalidArgument(expected(
                "DistributeTranspilerConfig", "runtime_split_send_recv",
                "False, or True after sync_mode is set False", repr(value)))
        self._runtime_split_send_recv = bool(value)

    @property
    def sync_mode(self):
        return self._sync_mode

    @sync_mode.setter
    def sync_mode(self, value):
        if value is None or (value and self._runtime_split_send_recv):
            raise InvalidArgument(expected(
                "DistributeTranspilerConfig", "sync_mode",
                "False, or True while runtime_split_send_recv is False", repr(value)))
        self._sync_mode = bool(value)


def parse_endpoints(pservers, where=_WHERE + ".transpile", what="pservers"):
    """The list of "host:port" endpoints in the comma-separated ``pservers``."""
    if not isinstance(pservers, str):
        raise InvalidType(expected(where, what, "a string 'ip:port,ip:port,...'",
                                   type(pservers).__name__))
    endpoints = pservers.split(",")
    for ep in endpoints:
        host, _, port = ep.rpartition(":")
        if not _HOST.fullmatch(host) or not port.isascii() or not port.isdigit() \
                or not 0 < int(port) < 65536:
            raise InvalidArgument(expected(where, what, "comma-separated 'ip:port' "
                                           "endpoints (port 1-65535)",
                                           f"{pservers!r:.200} (entry {ep!r:.100})"))
    if len(set(endpoints)) != len(endpoints):
        raise InvalidArgument(expected(where, what, "distinct endpoints",
                                       f"{pservers!r:.200}"))
    return endpoints


def _checked_programs(program, startup_program, where):
    """(main, startup): the given programs (None: the default ones), two distinct Programs."""
    program = program if program is not None else default_main_program()
    startup = startup_program if startup_program is not None else default_startup_program()
    for what, value in (("program", program), ("startup_program", startup)):
        if not isinstance(value, Program):
            raise InvalidType(expected(where, what, "a fluid.Program (or None for the "
                                       "default one)", type(value).__name__))
    if program is startup:
        raise InvalidArgument(expected(where, "startup_program", "a program other than the "
                                       "main program", "the main program itself"))
    return program, startup


def _role(op):
    return int(op.attrs.get("op_role", 0))


def _role_var(op):
    return list(op.attrs.get("op_role_var", ()))


def find_op_by_output_arg(block, name, reverse=False):
    """The index of the first (or, reversed, the last) op of ``block`` writing ``name``."""
    order = range(len(block.ops) - 1, -1, -1) if reverse else range(len(block.ops))
    for index in order:
        if name in block.ops[index].output_arg_names:
            return index
    return -1


def _rename_everywhere(block, old, new):
    """Rename a variable of ``block`` in its ops' arguments and op_role_var attributes (as
    Paddle's rename does: the role of a renamed gradient names the new name)."""
    block._rename_var(old, new)
    for op in block.ops:
        role_var = op.attrs.get("op_role_var")
        if role_var and old in role_var:
            op.attrs["op_role_var"] = [new if n == old else n for n in role_var]


def _delete_ops(block, ops):
    doomed = {id(op) for op in ops}
    block.ops[:] = [op for op in block.ops if id(op) not in doomed]
    block.program._changed()


class DistributeTranspiler:
    """Splits a training program into trainer and parameter-server programs (see the module
    docstring); Fluid 1.8's ``DistributeTranspiler`` in parameter-server mode."""

    def __init__(self, config=None):
        self.config = config if config is not None else DistributeTranspilerConfig()
        if not isinstance(self.config, DistributeTranspilerConfig):
            raise InvalidType(expected(_WHERE, "config", "a DistributeTranspilerConfig",
                                       type(self.config).__name__))
        if self.config.split_method is None:
            self.config.split_method = RoundRobin
        method = self.config.split_method
        if not (isinstance(method, type) and issubclass(method, PSDispatcher)
                and method is not PSDispatcher):
            raise InvalidType(expected(_WHERE, "config.split_method", "RoundRobin or HashName "
                                       "(a PSDispatcher class)", repr(method)))
        if not isinstance(self.config.min_block_size, int) or self.config.min_block_size < 8192:
            raise InvalidArgument(expected(_WHERE, "config.min_block_size",
                                           "an int >= 8192", repr(self.config.min_block_size)))
        if self.config.sync_mode or self.config.completely_not_async:
            self.distributed_mode = SYNC
        elif self.config.runtime_split_send_recv:
            self.distributed_mode = ASYNC
        else:
            self.distributed_mode = HALF_ASYNC
        self.counter_var = None
        self.origin_program = None
        self._trainer_done = False
        self._control_vars = 0

    # --- the trainer -------------------------------------------------------------------
    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1,
                  sync_mode=True, startup_program=None, current_endpoint="127.0.0.1:6174"):
        """Rewrite ``program`` (default: the default main program) and ``startup_program``
        into trainer ``trainer_id``'s, for the servers ``pservers`` ("ip:port,...") and
        ``trainers`` trainers, synchronous or not; remember what each server runs.
        ``current_endpoint`` serves Fluid's nccl2 mode only.

        Every argument is checked before anything changes, and a transpile that fails
        leaves the programs (and the transpiler) as they were."""
        where = _WHERE + ".transpile"
        if self.origin_program is not None:
            raise PreconditionNotMet(expected(where, "the transpiler", "used once",
                                              "transpile called a second time"))
        if self.config.mode != "pserver":
            raise Unimplemented(expected(where, "config.mode", "'pserver'",
                                         f"{self.config.mode!r} (nccl2 and collective "
                                         f"training are not built)"))
        if self.config.enable_dc_asgd:
            raise Unimplemented(expected(where, "config.enable_dc_asgd", "False",
                                         "True (DC-ASGD is not built)"))
        if isinstance(trainers, bool) or not isinstance(trainers, int) or trainers < 1:
            raise InvalidArgument(expected(where, "trainers", "the number of trainers (an "
                                           "int >= 1)", repr(trainers)))
        if isinstance(trainer_id, bool) or not isinstance(trainer_id, int):
            raise InvalidType(expected(where, "trainer_id", "an int", repr(trainer_id)))
        if not 0 <= trainer_id < trainers:
            raise OutOfRange(expected(where, "trainer_id", f"in [0, {trainers})",
                                      trainer_id))
        endpoints = parse_endpoints(pservers, where)
        program, startup = _checked_programs(program, startup_program, where)
        if not (isinstance(sync_mode, (bool, np.bool_))
                or (type(sync_mode) is int and sync_mode in (0, 1))):
            raise InvalidType(expected(where, "sync_mode", "True or False", repr(sync_mode)))
        if len(parse_endpoints(current_endpoint, where, "current_endpoint")) != 1:
            raise InvalidArgument(expected(where, "current_endpoint", "one 'ip:port'",
                                           repr(current_endpoint)))
        with rollback.all_or_nothing(self, program, startup):
            self._transpile(trainer_id, program, startup, endpoints, trainers, sync_mode,
                            where)
            self._mark_distributed(program, current_endpoint)
        # the programs made run RPC ops: their runtime (gRPC, the kernels) loads now, not
        # when a program first runs one, so a server's exe.run(pserver_program) listens at
        # once and a trainer's first step does not pay for the import
        from ... import distributed  # noqa: F401

    def _transpile(self, trainer_id, program, startup, endpoints, trainers, sync_mode, where):
        self.pserver_endpoints = endpoints
        self._refuse_distributed_tables(program, where)
        self.origin_program, self.startup_program = program, startup
        # what the servers are built from, as it was before the trainer's rewrite
        self._origin_vars = {n: copy.copy(v) for n, v in program.global_block().vars.items()}
        self.trainer_num, self.sync_mode, self.trainer_id = trainers, bool(sync_mode), trainer_id
        if not self.sync_mode and self.distributed_mode == SYNC \
                and not self.config.completely_not_async:
            # Fluid 1.8 takes the servers' mode from config.sync_mode alone, so
            # transpile(sync_mode=False) with a default config made servers that wait for
            # barriers its trainers never send; up to 1.5 this argument decided, and scripts
            # of that time pass only it. The argument decides here.
            self.distributed_mode = ASYNC if self.config.runtime_split_send_recv else HALF_ASYNC
        self.optimize_ops, self.params_grads = self._get_optimize_pass()
        if not self.optimize_ops:
            raise InvalidArgument(expected(where, "program", "a program with optimizer ops "
                                           "(call optimizer.minimize(loss) first)",
                                           "no op with the optimize role"))
        self._check_optimizers(where)
        self.param_name_to_grad_name = {p.name: g.name for p, g in self.params_grads}
        self.grad_name_to_param_name = {g.name: p.name for p, g in self.params_grads}
        self.sparse_update_ops = [op for op in program.global_block().ops
                                  if op.type in LOOKUP_TABLE_TYPES + ("nce",)
                                  and op.attrs.get("remote_prefetch") is True]
        self.sparse_param_to_height_sections = {}
        self._init_splited_vars()
        self._lr_ops = self._get_lr_ops()
        self._insert_trainer_ops(program)
        self._record_optimizer_vars()
        # the servers' startup programs come from this one, as it is before
        # get_trainer_program drops what only the optimizer reads
        self._origin_startup = startup.clone()

    def _refuse_distributed_tables(self, program, where):
        for op in program.global_block().ops:
            if op.type == "distributed_lookup_table" or (
                    op.type in LOOKUP_TABLE_TYPES and op.attrs.get("is_distributed")):
                table = op.input("W")[0]
                raise Unimplemented(expected(
                    where, f"lookup table '{table}'", "a table with is_distributed=False "
                    "(embedding(is_sparse=True) is sent as SelectedRows)",
                    "is_distributed=True: distributed lookup tables are not built yet"))

    def _check_optimizers(self, where):
        servable = pserver_programs.STATE_SHAPED_LIKE_PARAM
        for op in self.optimize_ops:
            if pserver_programs.is_optimizer_op(op) and op.type not in servable:
                raise Unimplemented(expected(
                    where, f"optimizer op '{op.type}'",
                    f"one the servers can run ({', '.join(sorted(servable))})",
                    op.type))
            if not _role_var(op):
                raise InvalidArgument(expected(
                    where, f"optimize op '{op.type}'", "an op_role_var [param, grad] naming "
                    "what it updates", "none"))

    def _get_optimize_pass(self):
        """(optimize ops, [param, grad] pairs): the ops whose op_role is Optimize, in program
        order, and the pair each names in op_role_var (first one per parameter)."""
        block = self.origin_program.global_block()
        ops, pairs, seen = [], [], set()
        for op in block.ops:
            if _role(op) != OP_ROLE_OPTIMIZE:
                continue
            ops.append(op)
            role_var = _role_var(op)
            if role_var and role_var[0] not in seen:
                seen.add(role_var[0])
                pairs.append([block.var(role_var[0]), block.var(role_var[1])])
        return ops, pairs

    def _init_splited_vars(self):
        program = self.origin_program
        param_list, grad_list, names = [], [], set()
        for p, g in self.params_grads:
            if isinstance(p, Parameter) and not p.trainable:
                continue
            if p.name not in names:
                param_list.append(p)
                names.add(p.name)
            if g.name not in names:
                grad_list.append(g)
                names.add(g.name)
        count = len(self.pserver_endpoints) if self.config.slice_var_up else 1
        grad_blocks = slice_variable(grad_list, count, self.config.min_block_size)
        param_blocks = slice_variable(param_list, count, self.config.min_block_size)
        #: parameter name -> its blocks (the parameter itself when uncut)
        self.param_var_mapping = self._create_vars_from_blocklist(program, param_blocks)
        #: gradient name -> the trainer's blocks of it (renamed per trainer when synchronous)
        self.grad_var_mapping = self._create_vars_from_blocklist(
            program, grad_blocks, add_trainer_suffix=self.trainer_num > 1)
        #: gradient block -> parameter block (by name)
        self.grad_param_mapping = collections.OrderedDict()
        for g, p in zip(grad_blocks, param_blocks):
            g_name, g_id, _ = g.split(":")
            p_name, p_id, _ = p.split(":")
            self.grad_param_mapping[self.grad_var_mapping[g_name][int(g_id)].name] = \
                self.param_var_mapping[p_name][int(p_id)]
        self.param_grad_ep_mapping = collections.OrderedDict(
            (ep, {"params": [], "grads": []}) for ep in self.pserver_endpoints)
        self.vars_overview = VarsDistributed()
        for name, pieces in self.param_var_mapping.items():
            offset = 0
            for block_id, piece in enumerate(pieces):
                cut = len(pieces) > 1
                self.vars_overview.add_distributed_var(
                    origin_var=self._origin_vars[name], slice_var=piece, is_slice=cut,
                    block_id=block_id if cut else 0, offset=offset if cut else 0,
                    vtype="Param")
                offset += math.prod(piece.shape)

    def _create_vars_from_blocklist(self, program, block_list, add_trainer_suffix=False):
        """{variable name: [its block variables]} for ``"name:id:size"`` blocks; a variable
        in one block is itself (renamed ``.trainer_N`` for a synchronous trainer's gradient)."""
        block_map = collections.OrderedDict()
        for block_str in block_list:
            varname, offset, size = block_str.split(":")
            block_map.setdefault(varname, []).append((int(offset), int(size)))
        block = program.global_block()
        mapping = collections.OrderedDict()
        suffix = f".trainer_{self.trainer_id}" if self.sync_mode and add_trainer_suffix else ""
        for varname, pieces in block_map.items():
            orig = block.var(varname)
            if len(pieces) == 1:
                if suffix:
                    _rename_everywhere(block, varname, varname + suffix)
                mapping[varname] = [orig]
                continue
            width = 1
            for d in orig.shape[1:]:
                width *= d
            mapping[varname] = [
                block.create_var(name=f"{varname}.block{i}{suffix}", persistable=False,
                                 dtype=orig.dtype, type=orig.type,
                                 shape=[size // width] + list(orig.shape[1:]))
                for i, (_, size) in enumerate(pieces)]
        return mapping

    def _record_optimizer_vars(self):
        """Record each optimizer state variable on the servers that update its parameter:
        cut like the parameter's block there when it has the parameter's shape, else whole."""
        for endpoint in self.pserver_endpoints:
            held = self.param_grad_ep_mapping[endpoint]["params"]
            for op in self.optimize_ops:
                if not pserver_programs.is_optimizer_op(op):
                    continue
                param = op.input("Param")[0]
                if not any(same_or_split_var(p.name, param) for p in held):
                    continue
                piece = self.vars_overview.get_distributed_var_by_origin_and_ep(param, endpoint)
                shaped = pserver_programs.STATE_SHAPED_LIKE_PARAM.get(op.type, ())
                for slot in op.input_names:
                    if slot in pserver_programs.NOT_STATE or not op.input(slot):
                        continue
                    var = self._origin_vars[op.input(slot)[0]]
                    shape = piece.slice.shape if slot in shaped else tuple(var.shape)
                    if shape == piece.slice.shape:
                        state = VarStruct(var.name, shape, var.dtype, var.type,
                                          var.lod_level, var.persistable)
                        self.vars_overview.add_distributed_var(
                            var, state, piece.is_slice, piece.block_id, piece.offset,
                            "Optimizer", endpoint)
                    else:
                        self.vars_overview.add_distributed_var(var, var, False, 0, 0,
                                                               "Optimizer", endpoint)

    def _mark_distributed(self, program, current_endpoint):
        """The marks Fluid puts on a transpiled trainer program (and copies to each server's),
        which saving and loading read; set last, once nothing can fail."""
        program._is_distributed = True
        program._endpoints = list(self.pserver_endpoints)
        program._ps_endpoint = current_endpoint
        program._is_chief = self.trainer_id == 0
        program._distributed_lookup_table = None
        program._parameters_on_pservers = self.vars_overview

    def _control_var(self, block):
        name = f"{CONTROL_VAR_PREFIX}@{self._control_vars}"
        self._control_vars += 1
        return block.create_var(name=name)

    def _insert_trainer_ops(self, program):
        block = program.global_block()
        items = list(self.grad_var_mapping.items())
        if not self.config.slice_var_up:
            # Fluid shuffles whole variables over the servers with the program's seed
            np.random.RandomState(program.random_seed).shuffle(items)
        send_vars = [v for _, pieces in items for v in pieces]
        recv_vars = [self.grad_param_mapping[v.name] for v in send_vars]
        dispatcher = self.config.split_method(self.pserver_endpoints)
        # one placement per block, by the parameter block: a gradient block goes where its
        # parameter block is updated
        eplist = dispatcher.dispatch(recv_vars)
        self._place = {v.name: ep for v, ep in zip(send_vars + recv_vars, eplist + eplist)}
        for v in recv_vars:
            self.vars_overview.get_distributed_var_by_slice(v.name).endpoint = self._place[v.name]
        self.grad_name_to_send_dummy_out = collections.OrderedDict()
        runtime_split = self.config.runtime_split_send_recv
        for grad_name, pieces in items:
            param_name = self.grad_name_to_param_name[grad_name]
            sent_name = pieces[0].name if len(pieces) == 1 else grad_name
            index = find_op_by_output_arg(block, sent_name, reverse=True)
            if index < 0:
                raise InvalidArgument(expected(_WHERE + ".transpile", f"gradient '{sent_name}'",
                                               "an op computing it", "none"))
            if len(pieces) > 1 and not runtime_split:
                self._insert_split_op(block, block.var(grad_name), index, pieces)
                index += 1
            if pieces[0].type == VarType.SELECTED_ROWS and self._is_remote_sparse(param_name):
                self.sparse_param_to_height_sections[param_name] = [v.shape[0] for v in pieces]
            dummy = self._control_var(block)
            self.grad_name_to_send_dummy_out[grad_name] = dummy
            if runtime_split:
                send_inputs = [block.var(sent_name)]
                sections = [v.shape[0] for v in pieces]
                tail = (f".trainer_{self.trainer_id}"
                        if self.config.completely_not_async and self.trainer_num > 1 else "")
                send_varnames = [v.name + tail for v in pieces]
            else:
                send_inputs, sections, send_varnames = pieces, [], []
            block._insert_op(index + 1, type="send", inputs={"X": send_inputs},
                             outputs={"Out": [dummy]},
                             attrs={"epmap": [self._place[v.name] for v in pieces],
                                    "sections": sections, "send_varnames": send_varnames,
                                    "op_role": OP_ROLE_RPC,
                                    "op_role_var": [param_name, sent_name]})
        barrier_out = self._control_var(block)
        deps = list(self.grad_name_to_send_dummy_out.values())
        if not self.sync_mode and self._lr_ops and self.counter_var is not None:
            counter_out = self._control_var(block)
            block.append_op(type="send", inputs={"X": [self.counter_var]},
                            outputs={"Out": [counter_out]},
                            attrs={"epmap": list(self.pserver_endpoints), "sections": [],
                                   "send_varnames": [self.counter_var.name] if runtime_split
                                   else [], "merge_add": True, "use_send_handler": False,
                                   "op_role": OP_ROLE_RPC,
                                   "op_role_var": [self.counter_var.name] * 2})
            deps.append(counter_out)
        if self.sync_mode or (runtime_split and self.config.half_async):
            block.append_op(type="send_barrier", inputs={"X": deps},
                            outputs={"Out": [barrier_out]},
                            attrs={"endpoints": list(self.pserver_endpoints),
                                   "trainer_id": self.trainer_id,
                                   "half_async": not self.sync_mode, "op_role": OP_ROLE_RPC})
        for grad_var, param_var in zip(send_vars, recv_vars):
            ep = self._place[param_var.name]
            self.param_grad_ep_mapping[ep]["params"].append(param_var)
            self.param_grad_ep_mapping[ep]["grads"].append(grad_var)
        need_sparse_update = collections.OrderedDict()
        recv_outputs = []
        for param_name, pieces in self.param_var_mapping.items():
            eps = [self._place[v.name] for v in pieces]
            grad_name = self.param_name_to_grad_name[param_name]
            dep = barrier_out if self.sync_mode else self.grad_name_to_send_dummy_out[grad_name]
            grad_pieces = self.grad_var_mapping[grad_name]
            role_grad = grad_pieces[0].name if len(grad_pieces) == 1 else grad_name
            if param_name in self.sparse_param_to_height_sections:
                for v in pieces:
                    self.vars_overview.get_distributed_var_by_slice(v.name).vtype = \
                        "RemotePrefetch"
                need_sparse_update[param_name] = (eps, [v.name for v in pieces])
                continue
            recv_varnames = []
            if runtime_split:
                recv_varnames = [v.name for v in pieces]
                pieces = [block.var(param_name)]
            recv_outputs.extend(pieces)
            block.append_op(type="recv", inputs={"X": [dep]}, outputs={"Out": pieces},
                            attrs={"epmap": eps, "recv_varnames": recv_varnames,
                                   "trainer_id": self.trainer_id, "op_role": OP_ROLE_RPC,
                                   "op_role_var": [param_name, role_grad]})
        self._update_remote_sparse_update_op(block, need_sparse_update)
        if self.sync_mode:
            block.append_op(type="fetch_barrier", inputs={"X": [barrier_out]},
                            outputs={"Out": recv_outputs},
                            attrs={"endpoints": list(self.pserver_endpoints),
                                   "trainer_id": self.trainer_id, "op_role": OP_ROLE_RPC})
        for param_name, pieces in self.param_var_mapping.items():
            if len(pieces) > 1 and param_name not in self.sparse_param_to_height_sections \
                    and not runtime_split:
                block.append_op(type="concat", inputs={"X": pieces},
                                outputs={"Out": [block.var(param_name)]},
                                attrs={"axis": 0, "op_role": OP_ROLE_DIST})
        self._append_trainer_startup_ops()

    def _is_remote_sparse(self, param_name):
        return any(param_name in op.input_arg_names for op in self.sparse_update_ops)

    @staticmethod
    def _insert_split_op(block, orig_var, index, pieces):
        sections = [v.shape[0] for v in pieces]
        if orig_var.type == VarType.SELECTED_ROWS:
            op_type, attrs = "split_selected_rows", {"height_sections": sections}
        else:
            op_type, attrs = "split_byref", {"sections": sections}
        attrs["op_role"] = OP_ROLE_DIST
        block._insert_op(index + 1, type=op_type, inputs={"X": [orig_var]},
                         outputs={"Out": pieces}, attrs=attrs)

    def _update_remote_sparse_update_op(self, block, need_sparse_update):
        """Each table the trainer reads with ``remote_prefetch`` is looked up on the servers:
        its lookup ops become one ``distributed_lookup_table``."""
        for param_name, (endpoints, table_names) in need_sparse_update.items():
            ops = [op for op in self.sparse_update_ops if param_name in op.input_arg_names]
            op_type = ops[0].type
            if op_type not in LOOKUP_TABLE_TYPES:
                raise Unimplemented(expected(_WHERE + ".transpile", f"sparse update op "
                                             f"'{op_type}' of '{param_name}'",
                                             "lookup_table or lookup_table_v2", op_type))
            ops = [op for op in ops if op.type == op_type]
            ids = [op.input("Ids")[0] for op in ops]
            outs = [op.output("Out")[0] for op in ops]
            padding_idx = ops[0].attrs.get("padding_idx", -1)
            _delete_ops(block, ops)
            # after the last op making an id, before the first reading an output
            last_in = max([i for i, op in enumerate(block.ops)
                           if set(op.output_arg_names) & set(ids)], default=-1)
            first_out = min([i for i, op in enumerate(block.ops)
                             if set(op.input_arg_names) & set(outs)], default=len(block.ops))
            if first_out <= last_in:
                raise InvalidArgument(expected(_WHERE + ".transpile", f"lookups of "
                                               f"'{param_name}'", "their ids computed before "
                                               "any of their outputs is read",
                                               f"op {first_out} reads an output, op "
                                               f"{last_in} makes an id"))
            block._insert_op(last_in + 1, type="distributed_lookup_table",
                             inputs={"Ids": ids, "W": [param_name]}, outputs={"Outputs": outs},
                             attrs={"table_names": table_names,
                                    "height_sections":
                                        self.sparse_param_to_height_sections[param_name],
                                    "endpoints": endpoints, "padding_idx": padding_idx,
                                    "trainer_id": self.trainer_id,
                                    "lookup_table_version": op_type})
            self.sparse_update_ops = [op for op in self.sparse_update_ops if op not in ops]

    def _sparse_table_names(self):
        """The tables the trainer reads on the servers, which it neither receives nor
        initialises (Fluid 1.8's sparse lookup tables). An nce op's table is its Weight, and
        only when the op itself reads remotely: nce here computes on the trainer's own copy
        of the table, so one without remote_prefetch is received like any parameter (1.8
        reads a "W" slot nce does not have)."""
        names = []
        for op in self.origin_program.global_block().ops:
            if op.type == "nce":
                remote = op.attrs.get("is_sparse") is True and \
                    op.attrs.get("remote_prefetch") is True
                table = op.input("Weight")[0] if remote else None
            elif (op.type == "lookup_table" and op.attrs.get("is_sparse") is True) \
                    or op.type == "distributed_lookup_table":
                table = op.input("W")[0]
            else:
                table = None
            if table is not None and table not in names:
                names.append(table)
        return names

    def _append_trainer_startup_ops(self):
        """The trainer starts from the servers' parameters: recv every parameter's blocks
        (tables read on the servers excepted), a fetch barrier, concat the cut ones."""
        block = self.startup_program.global_block()
        tables = self._sparse_table_names()
        for param_name, pieces in self.param_var_mapping.items():
            if param_name in tables:
                continue
            for v in pieces:
                if not block.has_var(v.name):
                    block.create_var(name=v.name, persistable=False, type=v.type,
                                     dtype=v.dtype, shape=v.shape, lod_level=v.lod_level)
            block.append_op(type="recv", inputs={"X": []}, outputs={"Out": [v.name for v in pieces]},
                            attrs={"epmap": [self._place[v.name] for v in pieces],
                                   "trainer_id": self.trainer_id, "op_role": OP_ROLE_RPC})
        barrier_out = self._control_var(block)
        block.append_op(type="fetch_barrier", inputs={}, outputs={"Out": [barrier_out]},
                        attrs={"endpoints": list(self.pserver_endpoints),
                               "trainer_id": self.trainer_id, "op_role": OP_ROLE_RPC})
        for param_name, pieces in self.param_var_mapping.items():
            if param_name in tables or len(pieces) <= 1:
                continue
            if not block.has_var(param_name):
                orig = self._origin_vars[param_name]
                block.create_var(name=param_name, persistable=orig.persistable, type=orig.type,
                                 dtype=orig.dtype, shape=orig.shape)
            block.append_op(type="concat", inputs={"X": [v.name for v in pieces]},
                            outputs={"Out": [param_name]}, attrs={"axis": 0})

    def _get_lr_ops(self):
        """The learning-rate schedule's ops (op_role LRSched). Asynchronous trainers cannot
        share one step counter: the counter's ``increment`` becomes a sum of one counter per
        trainer, which each trainer sends (Fluid's rewrite)."""
        lr_ops = []
        block = self.origin_program.global_block()
        for index, op in enumerate(list(block.ops)):
            if _role(op) not in (OP_ROLE_LR_SCHED, OP_ROLE_LR_SCHED | OP_ROLE_OPTIMIZE):
                continue
            if not self.sync_mode and op.type == "increment":
                op = self._per_trainer_counter(block, index, op)
            lr_ops.append(op)
        return lr_ops

    def _per_trainer_counter(self, block, index, op):
        counter = block.var(op.output("Out")[0])
        startup = self.startup_program.global_block()
        for sop in startup.ops:
            if sop.type == "fill_constant" and sop.output_arg_names == [counter.name]:
                sop._set_attr("value", float(-self.trainer_num))
        counters = []
        for t in range(self.trainer_num):
            name = f"{counter.name}.trainer_{t}"
            fields = dict(type=counter.type, shape=counter.shape, dtype=counter.dtype,
                          persistable=counter.persistable)
            counters.append(block.create_var(name=name, **fields))
            self._origin_vars[name] = copy.copy(counters[-1])
            if not startup.has_var(name):
                ConstantInitializer(1.0)(startup.create_var(name=name, **fields), startup)
        self.counter_var = counters[self.trainer_id]
        block._remove_op(index)
        return block._insert_op(index, type="sum", inputs={"X": counters},
                                outputs={"Out": [counter]}, attrs={"op_role": OP_ROLE_LR_SCHED})

    def get_trainer_program(self, wait_port=True):
        """The trainer's program: the transpiled main program without its optimizer and
        learning-rate ops (the servers run them). The startup program loses the initial
        values of what only the optimizer used, and a table read on the servers gets a
        ``fake_init`` placeholder. With ``wait_port`` it waits (up to WAIT_PORT_TIMEOUT
        seconds) until every server accepts connections."""
        self._require_transpiled("get_trainer_program")
        if not self._trainer_done:
            with rollback.all_or_nothing(self, self.origin_program, self.startup_program):
                self._delete_trainer_optimizer(is_startup=True)
                self._fake_init_sparse_tables()
                _delete_ops(self.origin_program.global_block(), self._lr_ops)
                self._delete_trainer_optimizer(is_startup=False)
                self._trainer_done = True
        if wait_port:
            wait_server_ready(self.pserver_endpoints)
        return self.origin_program

    def _optimizer_only_vars(self):
        used, role_vars = [], set()
        for op in self.optimize_ops:
            used.extend(n for n in op.input_arg_names if n not in used)
            role_vars.update(_role_var(op))
        return [n for n in used if n not in role_vars]

    def _delete_trainer_optimizer(self, is_startup):
        names = self._optimizer_only_vars()
        if is_startup:
            block = self.startup_program.global_block()
            _delete_ops(block, [op for op in block.ops
                                if set(op.output_arg_names) & set(names)])
        else:
            block = self.origin_program.global_block()
            _delete_ops(block, self.optimize_ops)
        still_read = {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
        for name in names:
            if block.has_var(name) and name not in still_read:
                block._remove_var(name)

    def _fake_init_sparse_tables(self):
        block = self.startup_program.global_block()
        for table in self._sparse_table_names():
            inits = [op for op in block.ops if table in op.output_arg_names]
            if len(inits) != 1:
                raise InvalidArgument(expected(_WHERE + ".get_trainer_program",
                                               f"table '{table}'", "one init op in the "
                                               "startup program", len(inits)))
            shape = inits[0].attrs.get("shape") or list(block.var(table).shape)
            block.append_op(type="fake_init", outputs={"Out": [table]},
                            attrs={"shape": list(shape)})
            _delete_ops(block, inits)

    # --- the servers -------------------------------------------------------------------
    def get_pserver_program(self, endpoint):
        """The program of the server at ``endpoint``: its parameter blocks and received
        gradients in block 0 with one ``listen_and_serv`` op, whose ``optimize_blocks`` run
        the learning-rate schedule and the update of each block it holds."""
        self._require_endpoint("get_pserver_program", endpoint)
        program = pserver_programs.build_pserver_program(self, endpoint)
        program._copy_dist_param_info_from(self.origin_program)
        self.pserver_program = program
        return program

    def get_pserver_programs(self, endpoint):
        """(main, startup) of the server at ``endpoint``."""
        main = self.get_pserver_program(endpoint)
        return main, self.get_startup_program(endpoint, pserver_program=main)

    def get_startup_program(self, endpoint, pserver_program=None, startup_program=None):
        """The startup program of the server at ``endpoint``: the original startup ops of the
        variables it holds, each parameter block initialised at its own shape."""
        self._require_endpoint("get_startup_program", endpoint)
        if pserver_program is None:
            pserver_program = pserver_programs.build_pserver_program(self, endpoint)
        return pserver_programs.build_pserver_startup(self, endpoint, pserver_program)

    def _require_transpiled(self, where):
        if self.origin_program is None:
            raise PreconditionNotMet(expected(f"{_WHERE}.{where}", "the transpiler",
                                              "transpile(...) called first", "not transpiled"))

    def _require_endpoint(self, where, endpoint):
        self._require_transpiled(where)
        if endpoint not in self.pserver_endpoints:
            raise InvalidArgument(expected(f"{_WHERE}.{where}", "endpoint",
                                           f"one of the pservers {self.pserver_endpoints}",
                                           repr(endpoint)))


def wait_server_ready(endpoints, timeout=None):
    """Wait until every "host:port" in ``endpoints`` accepts a TCP connection; raise
    ExecutionTimeout naming those that do not after ``timeout`` (WAIT_PORT_TIMEOUT) seconds."""
    deadline = time.monotonic() + (WAIT_PORT_TIMEOUT if timeout is None else timeout)
    waiting = list(endpoints)
    while True:
        for ep in list(waiting):
            host, _, port = ep.rpartition(":")
            try:
                with socket.create_connection((host, int(port)), timeout=1.0):
                    waiting.remove(ep)
            except OSError:
                pass
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise ExecutionTimeout(expected("wait_server_ready", "the parameter servers",
                                            "accepting connections", f"{waiting} not ready "
                                            f"after {timeout or WAIT_PORT_TIMEOUT:g} s"))
        time.sleep(0.2)


__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig", "wait_server_ready"]
