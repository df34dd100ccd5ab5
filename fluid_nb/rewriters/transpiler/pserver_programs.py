"""The parameter server's programs, built from what ``DistributeTranspiler.transpile``
recorded: which parameter and gradient blocks each server holds, the optimizer ops and the
learning-rate schedule.

A server's main program (Fluid 1.8's layout):

- block 0: its parameter blocks (persistable), each received gradient block, and with
  several synchronous trainers one ``g.trainer_t`` per trainer; then one
  ``listen_and_serv`` op;
- one block for the learning-rate schedule, when the program has one
  (``lr_decay_block_id``);
- one block per parameter block it holds, children of the previous one: with several
  synchronous trainers ``sum`` of the trainers' gradients and ``scale`` by 1 / trainers,
  then the optimizer op on the block (its state variables cut to the block's shape).
  ``grad_to_block_id`` maps each gradient block to its block ("g.block0:2").

Its startup program holds the original startup ops of the variables it has, a cut
parameter's at the shape of the block it holds.
"""
import collections
import os

from ...errors import InvalidArgument, expected
from ...framework.program import Program
from ...tensor.dtypes import VarType
from .slicing import orig_varname, same_or_split_var, varname_parts

#: optimizer op -> its state inputs shaped like the parameter (cut with it on a server);
#: the op types the servers can run
STATE_SHAPED_LIKE_PARAM = {
    "sgd": (), "adam": ("Moment1", "Moment2"), "adagrad": ("Moment",),
    "adamax": ("Moment", "InfNorm"), "momentum": ("Velocity",),
    "lars_momentum": ("Velocity",), "rmsprop": ("Moment", "MeanSquare", "MeanGrad"),
    "decayed_adagrad": ("Moment",), "ftrl": ("SquaredAccumulator", "LinearAccumulator"),
}
#: optimizer inputs a server takes from elsewhere than the original variables
NOT_STATE = ("Param", "Grad", "LearningRate", "Beta1Tensor", "Beta2Tensor")
#: startup ops whose "shape" attribute is the shape of what they make
_SHAPED_INITS = ("gaussian_random", "fill_constant", "uniform_random",
                 "truncated_gaussian_random")


def is_optimizer_op(op):
    return "Param" in op.inputs and "LearningRate" in op.inputs


def _thread_num(kind):
    # Fluid's ServerRuntimeConfig reads the same flags from the environment
    return int(os.environ.get(f"FLAGS_rpc_{kind}_thread_num", "12"))


def clone_var(block, var, persistable=True):
    """``var``'s twin in ``block`` (persistable unless told otherwise), or the one there."""
    if block.has_var(var.name):
        return block.var(var.name)
    return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, type=var.type,
                            lod_level=var.lod_level, persistable=persistable)


def per_trainer_grads(t):
    """Whether each trainer's gradient arrives under a name of its own (``g.trainer_t``).
    Fluid 1.8 tests ``sync_mode or completely_not_async and trainers > 1`` here, which also
    names them for a single synchronous trainer, whose gradient is sent unrenamed; the
    server waits for what the trainer sends."""
    return (t.sync_mode or t.config.completely_not_async) and t.trainer_num > 1


class _ServerBuilder:
    def __init__(self, t, endpoint):
        self.t = t
        self.endpoint = endpoint
        self.params = t.param_grad_ep_mapping[endpoint]["params"]
        self.grads = t.param_grad_ep_mapping[endpoint]["grads"]
        self.program = Program()
        self.program.random_seed = t.origin_program.random_seed
        self.glob = self.program.global_block()
        self.grad_to_block_id = []
        self.sparse_grad_to_param = []

    def origin_var(self, name):
        var = self.t._origin_vars.get(name)
        if var is None:
            raise InvalidArgument(expected("DistributeTranspiler.get_pserver_program",
                                           f"variable '{name}'", "a variable of the "
                                           "transpiled program", "none"))
        return var

    # --- block 0 -------------------------------------------------------------------------
    def declare_received(self):
        recv_inputs = []
        for v in self.params:
            clone_var(self.glob, v)
        for v in self.grads:
            name = v.name.split(".trainer_")[0]
            single = self.glob.create_var(name=name, persistable=True, type=v.type,
                                          dtype=v.dtype, shape=v.shape)
            if per_trainer_grads(self.t):
                for trainer in range(self.t.trainer_num):
                    recv_inputs.append(self.glob.create_var(
                        name=f"{name}.trainer_{trainer}", persistable=False, type=v.type,
                        dtype=v.dtype, shape=v.shape))
            else:
                recv_inputs.append(single)
        return recv_inputs

    # --- optimize blocks -------------------------------------------------------------------
    def holds(self, op):
        param = op.input("Param")[0]
        return any(same_or_split_var(p.name, param) for p in self.params)

    def param_block(self, op):
        param = op.input("Param")[0]
        return next((p for p in self.params if same_or_split_var(p.name, param)), None)

    def append_grad_merge(self, block, grad_name):
        """The merged gradient block of ``grad_name`` held here (None when not held), and
        with several trainers the ops that sum and average their copies."""
        grad = next((g for g in self.grads if orig_varname(g.name) == orig_varname(grad_name)),
                    None)
        if grad is None:
            return None
        orig, block_part, _ = varname_parts(grad.name)
        merged_name = f"{orig}.{block_part}" if block_part else orig
        merged = self.glob.var(merged_name)
        self.grad_to_block_id.append(f"{merged_name}:{block.idx}")
        if per_trainer_grads(self.t):
            copies = [f"{merged_name}.trainer_{i}" for i in range(self.t.trainer_num)]
            block.append_op(type="sum", inputs={"X": copies}, outputs={"Out": [merged_name]},
                            attrs={"use_mkldnn": False})
            block.append_op(type="scale", inputs={"X": [merged_name]},
                            outputs={"Out": [merged_name]},
                            attrs={"scale": 1.0 / float(self.t.trainer_num)})
        return merged

    def append_optimizer_op(self, block, op, merged):
        param_block = self.param_block(op)
        if param_block is None:
            return
        inputs = collections.OrderedDict()
        for slot in op.input_names:
            if slot == "Grad":
                inputs[slot] = [merged.name]
            elif slot == "Param":
                self.glob.create_var(name=param_block.name, persistable=True,
                                     dtype=param_block.dtype, shape=param_block.shape)
                inputs[slot] = [param_block.name]
            elif slot == "LearningRate":
                clone_var(self.glob, self.origin_var(op.input(slot)[0]),
                          persistable=self.origin_var(op.input(slot)[0]).persistable)
                inputs[slot] = op.input(slot)
        shaped = STATE_SHAPED_LIKE_PARAM[op.type]
        for slot in op.input_names:
            if slot in NOT_STATE:
                continue
            var = self.origin_var(op.input(slot)[0])
            shape = param_block.shape if slot in shaped else var.shape
            if not self.glob.has_var(var.name):
                self.glob.create_var(name=var.name, persistable=var.persistable,
                                     dtype=var.dtype, shape=shape, type=var.type)
            inputs[slot] = [var.name]
        outputs = {slot: list(names) for slot, names in op.outputs.items()}
        outputs["ParamOut"] = [param_block.name]
        block.append_op(type=op.type, inputs=inputs, outputs=outputs,
                        attrs=_copy_attrs(op.attrs))
        if self.glob.var(merged.name).type == VarType.SELECTED_ROWS:
            self.sparse_grad_to_param.append(f"{merged.name}:{param_block.name}")

    def server_var(self, var):
        """A non-optimizer op's variable on the server: the block of a parameter or
        gradient held here, else the variable itself (cloned persistable, as in Fluid)."""
        for held in self.glob.vars.values():
            if orig_varname(held.name) == orig_varname(var.name) and \
                    ".trainer_" not in held.name and (
                        orig_varname(held.name) in self.t.grad_name_to_param_name
                        or orig_varname(held.name) in self.t.param_name_to_grad_name):
                return held.name
        return clone_var(self.glob, var).name

    def append_plain_op(self, block, op):
        inputs = {slot: [self.server_var(self.origin_var(n)) for n in names]
                  for slot, names in op.inputs.items()}
        outputs = {slot: [self.server_var(self.origin_var(n)) for n in names]
                   for slot, names in op.outputs.items()}
        return block.append_op(type=op.type, inputs=inputs, outputs=outputs,
                               attrs=_copy_attrs(op.attrs))

    def clone_sub_block(self, op, parent):
        """An lr op's sub-block (a piecewise schedule's branch) copied under ``parent``."""
        if "sub_block" not in op.attrs:
            return
        source = self.t.origin_program.block(op.attrs["sub_block"])
        block = self.program._create_block(parent.idx)
        for var in source.vars.values():
            clone_var(block, var)
        for sub_op in source.ops:
            inputs = {s: list(n) for s, n in sub_op.inputs.items()}
            outputs = {s: list(n) for s, n in sub_op.outputs.items()}
            for names in list(inputs.values()) + list(outputs.values()):
                for n in names:
                    if block._find_var_recursive(n) is None:
                        clone_var(self.glob, self.origin_var(n))
            cloned = block.append_op(type=sub_op.type, inputs=inputs, outputs=outputs,
                                     attrs=_copy_attrs(sub_op.attrs))
            self.clone_sub_block(cloned, block)
        op._set_attr("sub_block", block.idx)

    def build(self):
        t = self.t
        recv_inputs = self.declare_received()
        on_server = [op for op in t.optimize_ops if is_optimizer_op(op) and self.holds(op)]
        optimize_blocks = []
        lr_decay_block_id = -1
        if t._lr_ops:
            lr_block = self.program._create_block(self.program.num_blocks - 1)
            optimize_blocks.append(lr_block)
            for op in t._lr_ops:
                self.clone_sub_block(self.append_plain_op(lr_block, op), lr_block)
            lr_decay_block_id = lr_block.idx
        parent = self.program.num_blocks - 1
        for opt_op in on_server:
            block = self.program._create_block(parent)
            optimize_blocks.append(block)
            target = opt_op.attrs["op_role_var"][0]
            mine = [op for op in t.optimize_ops if op.attrs["op_role_var"][0] == target]
            merged = None
            for op in mine:
                merged = self.append_grad_merge(block, op.attrs["op_role_var"][1])
                if merged is not None:
                    break
            if merged is None:
                continue
            for op in mine:
                if is_optimizer_op(op):
                    self.append_optimizer_op(block, op, merged)
                elif op not in t._lr_ops:
                    self.append_plain_op(block, op)
        if not optimize_blocks:
            # a server holding no block still serves: Fluid gives it one empty block
            optimize_blocks.append(self.program._create_block(self.program.num_blocks - 1))
        self.program.current_block_idx = 0
        attrs = {
            "optimize_blocks": [b.idx for b in optimize_blocks],
            "endpoint": self.endpoint,
            "pserver_id": t.pserver_endpoints.index(self.endpoint),
            "Fanin": t.trainer_num,
            "distributed_mode": t.distributed_mode,
            # Fluid dedups through a set (its order varies run to run); first-seen order here
            "grad_to_block_id": list(dict.fromkeys(self.grad_to_block_id)),
            "sparse_grad_to_param": self.sparse_grad_to_param,
            "lr_decay_block_id": lr_decay_block_id,
            "rpc_get_thread_num": _thread_num("get"),
            "rpc_send_thread_num": _thread_num("send"),
            "rpc_prefetch_thread_num": _thread_num("prefetch"),
        }
        self.glob.append_op(type="listen_and_serv", inputs={"X": [v.name for v in recv_inputs]},
                            outputs={}, attrs=attrs)
        return self.program


def _copy_attrs(attrs):
    return {k: (list(v) if isinstance(v, list) else v) for k, v in attrs.items()}


def build_pserver_program(t, endpoint):
    """The main program of the server at ``endpoint`` (see the module docstring)."""
    return _ServerBuilder(t, endpoint).build()


def build_pserver_startup(t, endpoint, pserver_program):
    """The startup program of the server at ``endpoint``: the original startup ops that make
    one of its variables, a parameter's made at the shape of the block held here."""
    startup = Program()
    source = t._origin_startup
    startup.random_seed = source.random_seed
    held = pserver_program.global_block().vars
    glob = startup.global_block()
    for var in held.values():
        clone_var(glob, var)
    params = t.param_grad_ep_mapping[endpoint]["params"]

    def on_server(name):
        for p in params:
            if same_or_split_var(p.name, name) and p.name != name:
                return p.name
        return name if name in held else None

    for op in source.global_block().ops:
        if op.type in ("recv", "fetch_barrier", "concat"):
            continue
        outputs = collections.OrderedDict()
        for slot, names in op.outputs.items():
            target = on_server(names[0]) if names else None
            if target is not None:
                outputs[slot] = [target]
        if not outputs:
            continue
        inputs = {slot: list(names) for slot, names in op.inputs.items()}
        attrs = _copy_attrs(op.attrs)
        if op.type in _SHAPED_INITS and "Out" in outputs:
            attrs["shape"] = list(glob.var(outputs["Out"][0]).shape)
        glob.append_op(type=op.type, inputs=inputs, outputs=outputs, attrs=attrs)
    return startup
