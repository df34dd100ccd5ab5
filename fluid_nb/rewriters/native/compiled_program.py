"""A program compiled to native code, which ``Executor.run`` takes in place of the program.

``compile(program, feed, fetch_list, scope)`` generates and builds the C++ and returns a
:class:`NativeProgram`. A program without LoD or sub-blocks is built for the shapes of
``feed``; running it with feeds of other shapes builds (or takes from the cache) another
specialisation. A program with a LoD feed or sub-blocks (``while``, DynamicRNN) is built
once and runs every batch and LoD that fits it (dynamic_run.py). Parameters stay in the
scope: the compiled code reads them from the scope's arrays and its optimizer ops update
them in place, so the interpreter and the compiled program can take turns on one scope.
"""
import ctypes

import numpy as np

from ...errors import InvalidArgument, NotFound, Unimplemented, expected
from ...exec.binding import memory_policy
from ...exec.executor import SCOPE_PLANS, Executor, FetchedArray, feed_tensor
from ...exec.scope import Scope, global_scope
from ...framework.program import EMPTY_VAR_NAME, Block, Program, without_feed_fetch_ops
from ...tensor.place import CPUPlace
from ...tensor.dtypes import VarType, to_numpy_dtype
from ...tensor.tensor import LoDTensor, SelectedRows, lossless_cast, value_array
from ...tensor.transfer import to_host
from .arguments import check
from .bound_call import BoundCall, FeedSlot, Parameters
from .build import build, entry, load, load_cuda
from .dynamic_run import DynamicBuild
from .generate import generate


class _Specialisation:
    """The build for one set of feed shapes: the library, the pointer array, the buffers
    of temporaries and feeds it owns, and the scope arrays it last pointed at."""

    def __init__(self, program, source, library, cached, lib, xp=np):
        self.source, self.library, self.cached = source, library, cached
        self.xp = xp  # NumPy, or CuPy for the CUDA target (buffers in device memory)
        #: the program's runs in order: a compiled entry, or (a program of the ops that fell
        #: back, its inputs fed from the buffers, its outputs copied back into them)
        self.steps = [entry(lib, symbol) if kind == "native"
                      else _interpreted(program, indices, source)
                      for kind, symbol, indices in source.segments]
        self.whole = self.steps[0] if len(self.steps) == 1 \
            and not isinstance(self.steps[0], _Interpreted) else None
        variables = source.variables
        self.pointers = (ctypes.c_void_p * max(len(variables), 1))()
        self.address = ctypes.addressof(self.pointers)
        self.owned = {}
        for sharing in (False, True):  # (the buffers, then the variables sharing one)
            for v in variables:
                if v.role != "persistable" and (v.shares is not None) == sharing:
                    array = self.owned[v.shares].reshape(v.shape) if sharing \
                        else xp.zeros(v.shape, v.dtype)
                    self.owned[v.name] = array
                    self.pointers[v.index] = _address(array)
        self.persistables = [v for v in variables if v.role == "persistable"]
        self.parameters = Parameters(self.persistables, self.pointers,
                                     lambda scope, v: bind_persistable(scope, v, xp))
        self.feeds = [(v.name, self.owned[v.name]) for v in variables if v.role == "feed"]
        #: the names some op writes (a feed among them is copied, never read in place)
        self.written = {n for op in program.global_block().ops
                        for args in op.outputs.values() for n in args}
        self._slots = {}  # (feed name, alias) -> FeedSlot
        #: the key of the scope's plans entry holding the interpreted runs' plans
        self.plans_key = ("native interpreted runs", object())

    def bind(self, scope):
        """Point at the scope's arrays of the persistables (again only where one changed)."""
        self.parameters.bind(scope)

    def feed_slot(self, name, alias):
        """The FeedSlot of feed ``name`` (one per name and way of feeding: the slots of
        one name share the pointer, and each resets it before the other takes it)."""
        slot = self._slots.get((name, alias))
        if slot is None:
            v = next(v for v in self.source.variables if v.name == name)
            slot = self._slots[(name, alias)] = FeedSlot(name, v.index, self.owned[name],
                                                          self.pointers, alias)
        return slot

    def copy_feeds(self, feed):
        """Copy each feed into the build's own buffer and point there."""
        for slot in self._slots.values():
            slot.reset()
        for name, buffer in self.feeds:
            if self.xp is np:
                buffer[...] = feed[name]
            else:
                buffer.set(feed[name])  # host to device

    def run_steps(self, scope):
        """The compiled entries and the interpreted runs in order."""
        for step in self.steps:
            if isinstance(step, _Interpreted):
                step.run(self, scope)
                if step.writes_persistables:  # (it may have replaced a parameter's array)
                    self.bind(scope)
            else:
                step(self.address)

    @staticmethod
    def fetch_from_scope(scope, name):
        """A copy of the value of ``name`` in ``scope`` (a parameter the step updated)."""
        held = scope.find_var(name)
        if held is None or getattr(held, "value", None) is None:
            raise NotFound(expected("a compiled program", "fetch",
                                    "a variable the compiled code computes", repr(name)))
        return np.array(to_host(held.value.array))


def bind_persistable(scope, v, xp):
    """The scope's array of persistable ``v`` as the compiled code works on it: the array
    itself, or (once) a writable C-ordered copy of ``v``'s type put in its place."""
    held = scope.find_var(v.name)
    tensor = getattr(held, "value", None)
    array = getattr(tensor, "array", None)
    if not isinstance(tensor, LoDTensor) or array is None:
        raise NotFound(expected("a compiled program", f"variable {v.name!r}",
                                "a tensor in the scope (run the startup program "
                                "first)", "none"))
    if not isinstance(array, xp.ndarray) or array.shape != v.shape \
            or array.dtype != v.dtype or not array.flags.c_contiguous \
            or (xp is np and not array.flags.writeable):
        if tuple(array.shape) != v.shape:
            raise InvalidArgument(expected(
                "a compiled program", f"variable {v.name!r}",
                f"shape {list(v.shape)} (as compiled)", list(array.shape)))
        # its own writable copy where the compiled code works (host or device)
        tensor.array = xp.array(array if xp is np else xp.asarray(array),
                                dtype=v.dtype, order="C")
        array = tensor.array
    return array


class _Interpreted:
    """A run of ops that fell back: a program of just those ops, run by the interpreter
    on the compiled program's buffers (fed without a copy) and the scope's parameters.

    Its run plan is built once per scope and kept with the plans of the build's other
    runs in one entry of the scope's plans (``Scope.plans``, which the scope bounds and
    drops with itself): a ResNet's or a Transformer's step has dozens of such runs, more
    than the plans a scope keeps one by one, so through ``Executor.run`` each rebuilt its
    plan every step."""

    def __init__(self, program, inputs, outputs, writes_persistables):
        self.program, self.inputs, self.outputs = program, inputs, outputs
        #: whether its ops write a persistable (the compiled code then binds the scope's
        #: arrays again: a run of dropouts leaves every parameter where it was)
        self.writes_persistables = writes_persistables
        self.executor = Executor(CPUPlace())

    def run(self, spec, scope):
        plans = scope.plans.get(spec.plans_key)
        if plans is None:
            if len(scope.plans) >= SCOPE_PLANS:
                scope.plans.clear()
            plans = scope.plans[spec.plans_key] = {}
        key = (self, memory_policy())  # a plan is shaped by the memory flags, as the executor's
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = self.executor._build_plan(
                self.program, scope, tuple(self.inputs), tuple(self.outputs), "feed", "fetch")
        feed = {name: spec.owned[name] for name in self.inputs}
        values = self.executor._run_plan(plan, feed, True)
        for name, value in zip(self.outputs, values):
            if isinstance(value, SelectedRows):
                # a name the program writes as a sparse gradient here and as a dense value
                # later (a table's summed gradient, then that plus its weight decay): the
                # trace saw the last, and the compiled ops reading it take it dense
                value = value.to_dense()
            np.copyto(spec.owned[name], value.reshape(spec.owned[name].shape))


def _interpreted(program, indices, source):
    block = program.global_block()
    owned = {v.name for v in source.variables if v.role != "persistable"}
    ops = [block.ops[i] for i in indices]
    for op in ops:
        if any(isinstance(value, Block) or (isinstance(value, list) and value
                                            and isinstance(value[0], Block))
               for value in op.attrs.values()):
            raise Unimplemented(expected("compile", f"op {op.type} to run in the interpreter "
                                         "between compiled ops", "an op without sub-blocks",
                                         "an op with a sub-block"))
    written = {n for op in ops for args in op.outputs.values() for n in args}
    read = [n for op in ops for args in op.inputs.values() for n in args]
    inputs = sorted({n for n in read if n in owned and n not in written})
    outputs = sorted(n for n in written if n in owned)
    part = Program()
    part_block = part.global_block()
    for name in sorted({n for op in ops for args in list(op.inputs.values())
                        + list(op.outputs.values()) for n in args if n != EMPTY_VAR_NAME}):
        var = block._find_var_recursive(name)
        if var is not None:
            part_block.create_var(name=name, shape=var.shape, dtype=var.dtype, type=var.type,
                                  persistable=var.persistable, lod_level=var.lod_level)
    for op in ops:
        part_block.append_op(type=op.type, inputs=dict(op.inputs), outputs=dict(op.outputs),
                             attrs=dict(op.attrs))
    persistables = {v.name for v in source.variables if v.role == "persistable"}
    return _Interpreted(part, inputs, outputs, not written.isdisjoint(persistables))


def _address(array):
    return array.ctypes.data if isinstance(array, np.ndarray) else array.data.ptr


class NativeProgram:
    """``program`` compiled to native code for the given feed and fetch names. Run it with
    ``Executor.run(native, feed=..., fetch_list=..., scope=...)`` or :meth:`run`."""

    def __init__(self, program, fetch_names, march_native=False, target="cpp"):
        self.program = program
        self.fetch_names = list(fetch_names)
        self.march_native = march_native
        self.target = target
        self._dtypes = _declared_dtypes(program)
        self._built = {}  # feed signature (or "dynamic") -> _Specialisation (DynamicBuild)
        #: (feed names in order, fetch names) -> the BoundCall of the last step run so
        self._calls = {}
        #: the last plain layout's step as one C call (BoundCall.native_step), tried first
        self._step = None
        #: sub-blocks: sizes are read at run time whatever the feeds
        self._blocks = len(program.blocks) > 1

    def _repr_html_(self):
        source = self.source
        return source._repr_html_() if source is not None else \
            "<p>a native program, not built yet</p>"

    @property
    def source(self):
        """The generated source of the last specialisation built (a NativeSource)."""
        return next(reversed(self._built.values())).source if self._built else None

    def specialise(self, feed, scope):
        """The build that runs ``feed``: the one build of a program with sub-blocks or fed
        LoD, else the specialisation on the feeds' shapes (made on first use)."""
        arrays = None if self._blocks else _feed_arrays(self._dtypes, feed)
        if arrays is None:
            return self._dynamic_build(feed or {}, scope)
        return self._specialised(arrays, scope)

    def _specialised(self, feed, scope):
        key = tuple(sorted((name, value.shape, value.dtype) for name, value in feed.items()))
        spec = self._built.get(key)
        if spec is None:
            source = generate(self.program, target=self.target, feed=feed,
                              fetch=self.fetch_names, scope=scope)
            library, cached = build(source.source, self.march_native, self.target)
            program = without_feed_fetch_ops(self.program)
            if self.target == "cuda":
                if source.fallbacks:
                    raise Unimplemented(expected(
                        "compile", "every op with native code for the CUDA target (ops run "
                        "in the interpreter between compiled ones on the host only)",
                        "an emitter for each op",
                        "; ".join(f"op {i} {t}: {why}" for i, t, why in source.fallbacks)))
                from ...tensor.place import cupy_module
                cupy = cupy_module()
                spec = _Specialisation(program, source, library, cached,
                                       load_cuda(library, cupy), xp=cupy)
            else:
                spec = _Specialisation(program, source, library, cached, load(library))
            self._built[key] = spec
        return spec

    def _dynamic_build(self, feed, scope):
        """The one build of a program whose sizes are read at run time."""
        built = self._built.get("dynamic")
        if built is not None:
            return built
        if self.target == "cuda":
            raise Unimplemented(expected(
                "compile", "a program without LoD or sub-blocks for the CUDA target (one "
                "with them is generated and built, not run, for CUDA)", "such a program",
                "LoD or sub-blocks"))
        block = self.program.global_block()
        feed = {name: feed_tensor(name, block.var(name), value, CPUPlace())
                if block.has_var(name) else value for name, value in feed.items()}
        source = generate(self.program, target=self.target, feed=feed,
                          fetch=self.fetch_names, scope=scope)
        if source.fallbacks:
            raise Unimplemented(expected(
                "compile", "every op with native code in a program with LoD or sub-blocks "
                "(ops there do not fall back to the interpreter)", "an emitter for each op",
                "; ".join(f"op {i} {t}: {why}" for i, t, why in source.fallbacks)))
        library, cached = build(source.source, self.march_native, self.target)
        declared = {v.name: block.var(v.name) for v in source.variables if v.role == "feed"}
        built = self._built["dynamic"] = DynamicBuild(
            self.program, source, library, cached, load(library), declared)
        return built

    def run(self, feed=None, fetch_list=None, scope=None, return_numpy=True):
        """The values of ``fetch_list`` (default: the names compiled for) after one run on
        ``feed`` with the parameters of ``scope``."""
        step = self._step
        if step is not None and return_numpy:  # the usual step: checked and run in C
            results = step(feed, fetch_list, global_scope() if scope is None else scope)
            if results is not None:
                return results
        key = _call_key(feed, fetch_list)
        call = self._calls.get(key) if key is not None else None
        if call is not None and (scope is None or isinstance(scope, Scope)):
            results = call.run(feed, global_scope() if scope is None else scope, return_numpy)
            if results is not None:  # a layout bound before: its C step is tried next
                self._step = call.native
                return results
        fetch_names = check("a compiled program", feed=feed, fetch=fetch_list, scope=scope)
        fetch_names = self.fetch_names if fetch_names is None else fetch_names
        scope = global_scope() if scope is None else scope
        arrays = None if self._blocks else _feed_arrays(self._dtypes, feed)
        if arrays is None:  # sizes read at run time: one build for every batch and LoD
            return self._dynamic_build(feed or {}, scope).run(feed or {}, fetch_names, scope,
                                                              return_numpy)
        spec = self._specialised(arrays, scope)
        for ids in spec.source.id_ranges:  # before anything runs (id_ranges.py)
            ids.check(arrays[ids.name])
        spec.copy_feeds(arrays)
        spec.bind(scope)
        if spec.whole is not None:  # the usual case: one compiled entry
            spec.whole(spec.address)
        else:
            spec.run_steps(scope)
        results = []
        for name in fetch_names:
            value = to_host(spec.owned[name]).copy() if name in spec.owned \
                else spec.fetch_from_scope(scope, name)
            results.append(value.view(FetchedArray) if return_numpy else LoDTensor(value))
        if key is not None and spec.xp is np:  # the next step with this layout: bound
            if len(self._calls) > 32:
                self._calls.clear()
            call = self._calls[key] = BoundCall(spec, arrays, fetch_names)
            self._step = call.native = call.native_step(fetch_list)
        return results

    def _executor_run(self, executor, feed, fetch_list, scope, return_numpy):
        want = "gpu" if self.target == "cuda" else "cpu"
        if executor.place.device != want:
            raise InvalidArgument(expected(
                "Executor.run", f"the place of a program compiled for {self.target!r}",
                "a CUDAPlace" if want == "gpu" else "CPUPlace", repr(executor.place)))
        return self.run(feed, fetch_list, scope, return_numpy)


Executor.direct_programs.add(NativeProgram)  # Executor.run hands it its steps

def _call_key(feed, fetch_list):
    """(the feed's names in order, the fetch's names or None) that picks a BoundCall, or
    None where the arguments are not a dict and a list or tuple of names or variables
    (the general path checks and converts them)."""
    if feed.__class__ is not dict:
        return None
    if fetch_list is None:
        return tuple(feed), None
    if fetch_list.__class__ is not list and fetch_list.__class__ is not tuple:
        return None
    names = []
    for item in fetch_list:
        name = item if item.__class__ is str else getattr(item, "name", None)
        if name.__class__ is not str:
            return None
        names.append(name)
    return tuple(feed), tuple(names)


def _declared_dtypes(program):
    """name -> the NumPy dtype block 0 declares for it."""
    return {name: np.dtype(to_numpy_dtype(var.dtype))
            for name, var in program.global_block().vars.items()
            if var.type == VarType.LOD_TENSOR}


def _feed_arrays(dtypes, feed):
    """The feeds as C-ordered arrays of their variables' types, by the executor's own
    rules (value_array refuses what is not an array of numbers, lossless_cast a cast that
    would change values); None when one carries LoD (a build whose sizes are read at run
    time takes them)."""
    arrays = {}
    for name, value in (feed or {}).items():
        want = dtypes.get(name)
        if value.__class__ is np.ndarray and value.dtype == want and value.flags.c_contiguous:
            arrays[name] = value  # the usual case: nothing to convert
            continue
        where = f"a compiled program: feed {name!r}"
        if (isinstance(value, LoDTensor) and value.lod()) or (
                isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list)
                and value[1]):
            return None
        array = value_array(value, where)
        if want is not None:
            array = lossless_cast(array, want, where)
        # (not ascontiguousarray, which makes a 0-D array 1-D)
        arrays[name] = array if array.flags.c_contiguous else array.copy(order="C")
    return arrays


def compile(program, feed, fetch_list, scope=None, march_native=False, target="cpp"):
    """``program`` compiled to native code for ``feed`` (arrays, LoDTensors or (array, lod)
    pairs), after a first trace run of the interpreter (on a copy of the scope). Without
    LoD or sub-blocks the build is specialised on the feeds' shapes (ops without native
    code run in the interpreter between compiled runs); with a LoD feed or a ``while``
    loop one build runs every batch, and an op without native code raises Unimplemented
    naming it. ``target="cuda"`` builds the CUDA source with nvcc and runs it on a
    CUDAPlace (needs CuPy and a GPU; a program with LoD or loops is built, not run)."""
    fetch_names = check("compile", program, feed, fetch_list, scope, target,
                        flags=[("march_native", march_native)], fetch_required=True)
    native = NativeProgram(program, fetch_names, march_native, target)
    scope = global_scope() if scope is None else scope
    native.specialise(feed, scope)
    return native
