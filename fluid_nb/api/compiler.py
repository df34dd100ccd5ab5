"""``fluid.CompiledProgram``, ``BuildStrategy``, ``ExecutionStrategy``, ``ParallelExecutor``.

In Fluid these turn a program into a multi-device graph (data parallelism: the batch split
over places, gradients all-reduced). fluid_nb runs one place, so a compiled program runs
exactly as its program does: ``Executor.run(compiled, ...)`` takes it, and
``with_data_parallel`` records what was asked and runs on the first place given (a batch
split over N identical places and averaged computes what one place computes on the whole
batch when the loss is a mean). The strategies are the attribute bags scripts configure.
"""
import copy

from ..errors import InvalidArgument, InvalidType, expected
from ..framework.graph import Graph
from ..framework.program import Program


class _Strategy:
    """Attributes with Fluid's names and defaults; setting an unknown one is refused."""
    _defaults = {}

    def __init__(self):
        for name, value in self._defaults.items():  # a copy each: lists and sets are mutable
            object.__setattr__(self, name, copy.copy(value))

    def __setattr__(self, name, value):
        if name not in self._defaults:
            raise InvalidArgument(expected(type(self).__name__, "attribute",
                                           "one of " + ", ".join(sorted(self._defaults)),
                                           repr(name)))
        object.__setattr__(self, name, value)

    def __repr__(self):
        changed = {k: getattr(self, k) for k, v in self._defaults.items()
                   if getattr(self, k) != v}
        return f"{type(self).__name__}({changed})"


class BuildStrategy(_Strategy):
    """How Fluid builds the multi-device graph (fusions, reduce strategy, ...)."""

    class ReduceStrategy:
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy:
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    _defaults = {
        "reduce_strategy": 0, "gradient_scale_strategy": 0, "debug_graphviz_path": "",
        "enable_sequential_execution": False, "fuse_elewise_add_act_ops": False,
        "fuse_bn_act_ops": False, "fuse_relu_depthwise_conv": False,
        "fuse_broadcast_ops": False, "fuse_all_optimizer_ops": False,
        "fuse_all_reduce_ops": False, "enable_inplace": False, "memory_optimize": False,
        "enable_backward_optimizer_op_deps": True, "cache_runtime_context": False,
        "sync_batch_norm": False, "num_trainers": 1, "trainer_id": 0, "remove_unnecessary_lock": True,
        "enable_auto_fusion": False, "is_distribution": False, "mkldnn_enabled_op_types": set(),
        # multi-trainer settings (collective training scripts set them)
        "trainers_endpoints": [], "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
        "hierarchical_allreduce_inter_nranks": 0, "async_mode": False,
    }


class ExecutionStrategy(_Strategy):
    """How Fluid runs the graph (threads, how often local scopes are dropped)."""
    _defaults = {"num_threads": 0, "use_thread_barrier": False,
                 "num_iteration_per_drop_scope": 100, "num_iteration_per_run": 1,
                 "use_experimental_executor": False, "allow_op_delay": False,
                 "use_cuda": False}


class CompiledProgram:
    """A program prepared for running; ``Executor.run`` takes it as the program itself."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, (Program, Graph)):
            raise InvalidType(expected("CompiledProgram", "program_or_graph",
                                       "a Program (or core.Graph)",
                                       type(program_or_graph).__name__))
        _check_strategy("CompiledProgram", "build_strategy", build_strategy, BuildStrategy)
        # from a Graph, as in Fluid, there is no program: what takes one refuses it
        self._graph = program_or_graph if isinstance(program_or_graph, Graph) else None
        self._program = None if self._graph is not None else program_or_graph
        self._build_strategy = build_strategy or BuildStrategy()
        self._exec_strategy = ExecutionStrategy()
        self._loss_name = None
        self._places = None
        self._is_data_parallel = False

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        """Ask for data parallelism over ``places``; it runs on the first of them (see the
        module docstring). Returns self, as in Fluid."""
        if loss_name is not None and not isinstance(loss_name, str):
            raise InvalidType(expected("with_data_parallel", "loss_name", "a variable name",
                                       repr(loss_name)))
        if loss_name is not None and self._program is not None and \
                self._program.global_block()._find_var_recursive(loss_name) is None:
            raise InvalidArgument(expected("with_data_parallel", "loss_name",
                                           "a variable of the program", repr(loss_name)))
        _check_strategy("with_data_parallel", "build_strategy", build_strategy, BuildStrategy)
        _check_strategy("with_data_parallel", "exec_strategy", exec_strategy,
                        ExecutionStrategy)
        if share_vars_from is not None and not isinstance(share_vars_from, CompiledProgram):
            raise InvalidType(expected("with_data_parallel", "share_vars_from",
                                       "a CompiledProgram", type(share_vars_from).__name__))
        if places is not None and not isinstance(places, (list, tuple)):
            places = [places]
        if places is not None and not places:
            raise InvalidArgument(expected("with_data_parallel", "places",
                                           "at least one place", "an empty list"))
        self._is_data_parallel = True
        self._loss_name = loss_name
        self._build_strategy = build_strategy or self._build_strategy
        self._exec_strategy = exec_strategy or self._exec_strategy
        self._places = list(places) if places is not None else None
        return self

    def with_inference_optimize(self, config):
        """Kept for Fluid scripts: the program runs as it is."""
        return self

    def __repr__(self):
        mode = " data parallel" if self._is_data_parallel else ""
        if self._program is None:
            return f"CompiledProgram(graph{mode})"
        return f"CompiledProgram({len(self._program.global_block().ops)} ops{mode})"


def _check_strategy(where, name, value, kind):
    if value is not None and not isinstance(value, kind):
        raise InvalidType(expected(where, name, f"a {kind.__name__} or None",
                                   type(value).__name__))


class ParallelExecutor:
    """Fluid's older data-parallel runner; here an Executor on one place over the program
    (``main_program``, default the default main program) and ``scope``."""

    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None,
                 exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        from ..exec import CPUPlace, CUDAPlace, Executor, global_scope
        from ..framework.program import default_main_program
        self._place = CUDAPlace(0) if use_cuda else CPUPlace()
        self._executor = Executor(self._place)
        self._program = CompiledProgram(main_program or default_main_program(),
                                        build_strategy).with_data_parallel(
            loss_name, exec_strategy=exec_strategy, places=[self._place])
        self._scope = scope if scope is not None else global_scope()

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Run once: ``feed`` a dict (or a list with one dict per place: their batches are
        joined, as the places would have split them)."""
        feed = feed if feed is not None else feed_dict
        if isinstance(feed, (list, tuple)):
            feed = _joined(feed)
        return self._executor.run(self._program, feed=feed, fetch_list=fetch_list,
                                  scope=self._scope, return_numpy=return_numpy)

    @property
    def device_count(self):
        return 1

    def drop_local_exe_scopes(self):
        """Nothing is kept between runs here."""


def _joined(feeds):
    import numpy as np
    if not feeds or not all(isinstance(f, dict) for f in feeds):
        raise InvalidType(expected("ParallelExecutor.run", "feed",
                                   "a dict or a list of dicts", repr(feeds)[:60]))
    names = feeds[0].keys()
    return {name: np.concatenate([np.asarray(f[name]) for f in feeds]) for name in names}
