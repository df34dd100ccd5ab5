"""What ``listen_and_serv`` does: serve one endpoint until every trainer is done.

Every call is first admitted, at one point (:meth:`ParameterServer._admit`), in the gRPC
thread that received it (:class:`~fluid_nb.distributed.rpc_server.RPCServer`): a trainer id in
``[0, Fanin)``, a method the server serves, a name it receives or holds, and for a variable
sent, its value decoded whole and checked against what the server program declares
(:func:`~fluid_nb.distributed.messages.decode`). A call that fails admission is answered
with an error status (INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED) saying what was expected,
and never reaches the loop: one malformed message cannot stop the server nor count as a
trainer's step. Admitted calls are taken one at a time (under one lock); the thread that runs
the op (``exe.run(pserver_program)``) waits meanwhile, watching the deadlines, until every
trainer is done or the server fails. Received values are written into the server's scope (a
child of the run's scope, as Paddle's ``recv_scope``); the optimize blocks run there through
the executor, in the thread whose call completed the round.

Sync mode (``distributed_mode`` 0) goes in rounds of two phases, as Fluid's:

- *send*: trainers send their gradients, then a ``BATCH_BARRIER@RECV``. When every trainer
  still training has sent its barrier, the server runs ``lr_decay_block_id`` (if any) and
  the ``optimize_blocks`` in order, and the phase turns to
- *get*: trainers get the updated parameters, then send ``FETCH_BARRIER@RECV``; when all
  have, the next round's send phase begins.

A request that belongs to the other phase (a fast trainer's next gradient, a get before
the optimization ran) waits until its phase comes. The server starts in a get phase, for
the parameters trainers fetch at startup; a trainer whose first request is a send has no
startup fetch, and counts as having passed it. Barriers are counted by trainer id, so the
server knows who is missing: once a phase has begun (its first request, or the end of the
previous phase), every trainer must reach its barrier within ``FLAGS_rpc_round_deadline``
ms, or the server stops with ExecutionTimeout naming the trainers that did not, and
refuses the calls waiting (their trainers get Unavailable with that reason) instead of
blocking the round forever.

A ``SendAndGetVariables`` call (a trainer's step in one call) is taken as the separate
calls it stands for, in their order: its variables, its send barrier, its gets, its fetch
barrier (:attr:`Call.stages`); it waits, as they would, wherever its next part belongs to
the other phase, and is answered once all its parts are done. The values a get phase
serves are encoded once per phase (:meth:`ParameterServer._encoded`), whatever the number
of trainers that ask. In sync mode a batch that sends and gets must carry the send barrier
between them (without it the round could never turn), else it is refused.

Async mode (1, and half-async 2): each received gradient runs its optimize block
(``grad_to_block_id``) at once, and a trainer's step counter (``@LR_DECAY_COUNTER@...``) the
learning-rate schedule's block; gets are answered at once; barriers are acknowledged. A
batch (an async trainer's step) is taken whole: its variables applied in order, each as
its own call would be, then its gets answered with the values they left.
Once a trainer has finished, the others must each be heard from within the round deadline.

``COMPLETE@RECV`` (a trainer's ``exe.close()``) takes the trainer out of the barriers; the
loop returns when all ``Fanin`` trainers have completed.

Checkpoints (:mod:`.checkpoint`): with ``FLUID_NB_CHECKPOINT_DIR`` set, a server that finds
a whole checkpoint there loads it before serving and counts its rounds on from the one
saved (printing ``resumed from round K``); with ``FLUID_NB_CHECKPOINT_EVERY`` = K too, it
saves its shard there after every K-th optimize round (async: every K-th update). A
``CheckpointNotify`` (Fluid's ``checkpoint_notify`` op: varname ``SAVE@CHECKPOINTNOTIFY``,
the folder in ``out_varname``) saves it there at once, in any phase. A server started
again in the middle of a sync round takes the trainers' retried calls as that round: its
startup phase lets a trainer's send through as Fluid's first round does.
"""
import os
import sys
import threading
import time

import grpc

from .. import flags
from ..errors import ExecutionTimeout, FluidError, InvalidArgument, expected
from ..exec.executor import bind, run_steps
from ..tensor.dtypes import convert_dtype
from ..tensor.tensor import LoDTensor, SelectedRows
from . import checkpoint, messages, status
from . import send_recv_pb2 as pb
from .job import CHECKPOINT_DIR_VARIABLE, CHECKPOINT_EVERY_VARIABLE
from .rpc_server import RPCServer

SYNC = 0
SEND, GET = "send", "get"
#: the methods a server answers (Fluid's monomer calls are not built)
SERVED = ("SendVariable", "GetVariable", "GetVariableNoBarrier", "PrefetchVariable",
          "CheckpointNotify", pb.BATCH_METHOD)
#: a batch's parts (:attr:`Call.stages`), in the order they are taken
SENDS, SEND_BARRIER, GETS, FETCH_BARRIER = "sends", "send barrier", "gets", "fetch barrier"
_SENDING = (SENDS, SEND_BARRIER)
#: the name of the learning-rate schedule's step counter (Paddle's LEARNING_RATE_DECAY_COUNTER)
LR_DECAY_COUNTER = "@LR_DECAY_COUNTER@"


class Refused(Exception):
    """A request the server answers with an error status (the loop goes on)."""

    def __init__(self, code, details):
        super().__init__(details)
        self.code, self.details = code, details


class _Block:
    """An optimize block bound once to the server's scope and run as often as needed."""

    def __init__(self, executor, block, scope):
        self.executor, self.block, self.scope = executor, block, scope
        self.prepared = self.steps = None

    def run(self):
        prepared = self.executor.prepare(self.block)
        if prepared is not self.prepared:
            self.prepared = prepared
            self.steps = bind(prepared, self.scope, self.scope, self.executor)
        run_steps(prepared, self.steps, self.executor.trace, self.executor.watch, self.scope)


class ParameterServer:
    """One ``listen_and_serv`` op's state: see the module docstring."""

    def __init__(self, ctx):
        attrs = ctx.attrs
        self.endpoint = attrs["endpoint"]
        self.fanin = int(attrs["Fanin"])
        self.mode = int(attrs["distributed_mode"])
        if self.fanin < 1:
            raise InvalidArgument(expected(self.where, "attribute Fanin",
                                           "the number of trainers (>= 1)", self.fanin))
        program = ctx.program
        self.global_block = program.global_block()
        self.scope = ctx.scope.new_scope()
        self.receivable = set(ctx.input_names("X"))
        grad_blocks = {}
        for entry in attrs["grad_to_block_id"]:
            grad, _, index = entry.rpartition(":")
            if not grad or not index.lstrip("-").isdigit():
                raise InvalidArgument(expected(self.where, "grad_to_block_id entries",
                                               "'grad_name:block_index'", repr(entry)))
            grad_blocks[grad] = int(index)
        self.receivable |= set(grad_blocks)
        #: (name, is SelectedRows, dtype, shape, program version) of received values that
        #: matched the program's declaration (see _check_declared)
        self._fitting = set()
        for name in self.receivable:  # the holders the optimize blocks bind to
            self.scope.var(name)
        ex = ctx.executor
        blocks = {}

        def block(index):
            if index not in blocks:
                blocks[index] = _Block(ex, program.block(index), self.scope)
            return blocks[index]

        self.optimize = [block(i) for i in attrs["optimize_blocks"]]
        lr_decay = attrs["lr_decay_block_id"]
        #: the learning-rate schedule: in sync mode it runs with the optimize blocks (Fluid
        #: lists it first among them); in async mode each trainer's step counter runs it
        self.lr_decay = block(lr_decay) if lr_decay is not None and lr_decay >= 0 else None
        if self.lr_decay is not None and lr_decay not in attrs["optimize_blocks"]:
            self.optimize.insert(0, self.lr_decay)
        self.grad_blocks = {grad: block(index) for grad, index in grad_blocks.items()}
        bound = {b.block.idx for b in self.grad_blocks.values()}
        #: async: block 1 runs once at the start unless a gradient owns it (Paddle's rule)
        self.once = [block(1)] if (self.mode != SYNC and program.num_blocks > 1
                                   and 1 not in bound and 1 in attrs["optimize_blocks"]) else []
        self.deadline = max(float(flags.flag("FLAGS_rpc_round_deadline")), 1.0) / 1000.0
        # the round's state
        self.training = set(range(self.fanin))
        self.phase, self.round, self.startup = GET, 0, True
        self.arrived = set()
        self.waiting = []
        #: name -> its VariableMessage's pieces, for this get phase (see _encoded)
        self.encoded = {}
        self.clock = None
        self.last_heard = {}
        self.completed = set()
        self.step_totals = {}
        #: guards everything above; the serving thread waits on it for news
        self.lock = threading.Condition()
        self.stopped = self.failure = None
        self.program, self.executor, self.run_scope = program, ex, ctx.scope
        self._resume()

    # --- checkpoints (see fluid_nb.distributed.checkpoint) -----------------------------------
    def _resume(self):
        """Where ``FLUID_NB_CHECKPOINT_DIR`` holds a whole checkpoint, load it (after the
        startup program ran, before serving) and go on from its round; say so in a line."""
        self.checkpoint_dir = os.environ.get(CHECKPOINT_DIR_VARIABLE) or None
        every = os.environ.get(CHECKPOINT_EVERY_VARIABLE, "").strip()
        if every and (not every.isdigit() or int(every) < 1):
            raise InvalidArgument(expected(self.where, CHECKPOINT_EVERY_VARIABLE,
                                           "a number of optimize rounds >= 1", repr(every)))
        self.checkpoint_every = int(every) if every and self.checkpoint_dir else None
        if self.checkpoint_dir is None:
            return
        resumed = checkpoint.restore(self.checkpoint_dir, self.program, self.run_scope)
        if resumed is not None:
            self.round = resumed
            print(f"{self.where}: resumed from round {resumed} (checkpoint in "
                  f"{self.checkpoint_dir})", flush=True)

    def _save(self, directory):
        """Write this server's shard to ``directory`` (under the lock: no round moves), with
        the number of optimize rounds run (a send phase's round has not optimized yet)."""
        return checkpoint.save(directory, self.program, self.run_scope,
                               self.round - (self.phase == SEND))

    def _saved_every(self):
        """After an optimize round: the periodic checkpoint, when one is due. A save that
        fails is reported, not fatal: the training goes on with the last whole checkpoint."""
        if self.checkpoint_every is None or self.round % self.checkpoint_every:
            return
        try:
            self._save(self.checkpoint_dir)
        except OSError as exc:
            print(f"{self.where}: the checkpoint of round {self.round} was not written "
                  f"({exc}); the previous one stays", file=sys.stderr, flush=True)

    def _checkpoint_notify(self, call):
        """A trainer's ``checkpoint_notify``: the shard saved into the folder the message
        names (``out_varname``; empty: the server's own checkpoint directory)."""
        directory = call.message.out_varname or self.checkpoint_dir
        if not directory:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, expected(
                f"{self.where}: CheckpointNotify", "a folder", "the message's out_varname, "
                f"or {CHECKPOINT_DIR_VARIABLE} set for the server", "neither"))
        if "\x00" in directory:  # no file system takes it; os would raise ValueError
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                f"{self.where}: CheckpointNotify", "out_varname", "a folder path",
                f"{directory[:60]!r} (a NUL byte in it)"))
        try:
            self._save(directory)
        except OSError as exc:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, expected(
                f"{self.where}: CheckpointNotify", "out_varname", "a folder the server can "
                "write", f"'{directory}' ({exc})")) from None
        call.answer()

    @property
    def where(self):
        return f"listen_and_serv at {self.endpoint}"

    # --- the loop ----------------------------------------------------------------------------
    def serve(self):
        server = RPCServer(self.endpoint, self._take_one, workers=16 + 8 * self.fanin)
        reason = "the server has stopped (all its trainers completed)"
        try:
            with self.lock:
                for b in self.once:
                    b.run()
                while self.training and self.failure is None:
                    self.lock.wait(self._time_left())
                    self._check_deadline()
                if self.failure is not None:
                    raise self.failure
        except BaseException as exc:
            reason = f"the server stopped: {exc}"
            raise
        finally:
            with self.lock:
                self.stopped = reason
                self._refuse_waiting(reason)
            server.stop(reason)

    def _take_one(self, call):
        """A gRPC thread's call: admitted, then taken under the lock; a failure of the server
        itself (an optimize block's error) stops it."""
        try:
            self._admit(call)
        except Refused as refusal:
            call.refuse(refusal.code, refusal.details)
            return
        with self.lock:
            if self.stopped is not None:
                call.refuse(grpc.StatusCode.ABORTED, self.stopped)
                return
            watched = self._watched()
            try:
                self._take(call)
            except Exception as exc:  # noqa: BLE001  (the serving thread raises it)
                self.failure = exc
                reason = f"the server stopped: {exc}"
                self.stopped = reason
                call.refuse(grpc.StatusCode.ABORTED, reason)
                self._refuse_waiting(reason)
            finally:
                # the serving thread is woken only for news it acts on: waking it on every
                # call costs the call a thread switch (a later deadline it finds when the
                # wait it planned ends)
                if self._watched() != watched:
                    self.lock.notify_all()

    def _watched(self):
        """What the serving thread waits on: trainers training and completed, a failure,
        whether a deadline clock runs."""
        return len(self.training), len(self.completed), self.failure, self.clock is None

    def _time_left(self):
        """How long the loop may wait for the next call before a deadline needs checking."""
        if self.mode != SYNC:
            return min(self.deadline, 1.0) if self.completed else None
        if self.clock is None:
            return None
        return max(self.clock + self.deadline - time.monotonic(), 0.0) + 0.01

    def _admit(self, call):
        """Refuse (raise Refused) a call the loop must never see; decode a sent variable into
        ``call.value``. Reads only what the server fixed when it was made, so it runs
        outside the lock: decoding a large tensor holds no other trainer up."""
        t, name = call.trainer_id, call.name
        if not 0 <= t < self.fanin:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                self.where, "trainer_id", f"in [0, Fanin={self.fanin})", t))
        if call.method not in SERVED:
            raise Refused(grpc.StatusCode.UNIMPLEMENTED, expected(
                self.where, "method", ", ".join(SERVED), call.method))
        if call.batch:
            return self._admit_batch(call)
        if call.method == "CheckpointNotify":
            if name != checkpoint.NOTIFY_NAME:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                    f"{self.where}: CheckpointNotify", "varname", checkpoint.NOTIFY_NAME,
                    repr(name)))
            return
        if name in messages.CONTROL_NAMES or call.method == "PrefetchVariable":
            return  # a prefetch's ids are decoded with the table they index
        if call.method == "SendVariable":
            self._check_receivable(name)
            try:
                call.value = messages.decode(call.message, self.where)
                self._check_declared(name, call.value)
            except FluidError as exc:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
            return
        if call.method == "GetVariableNoBarrier" and name.endswith(messages.WITHOUT_BARRIER):
            name = name[:-len(messages.WITHOUT_BARRIER)]
        self._check_held(name)

    def _admit_batch(self, call):
        """A batch is admitted whole or not at all: every variable it sends decoded and
        checked as a SendVariable's, every name it gets one the server holds, no control
        name among them (the barriers are its flags), the trainer id of each variable the
        batch's; its parts (:attr:`Call.stages`) are fixed here."""
        batch, t = call.message, call.trainer_id
        values = []
        for variable in batch.variables:
            name = variable.varname
            self._check_plain(name, "variables")
            if variable.trainer_id != t:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                    f"{self.where}: {call.method}, variable '{name}'", "trainer_id",
                    f"the batch's ({t})", variable.trainer_id))
            self._check_receivable(name)
            try:
                value = messages.decode(variable, self.where)
                self._check_declared(name, value)
            except FluidError as exc:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
            values.append((name, value))
        for name in batch.get_varnames:
            self._check_plain(name, "get_varnames")
            self._check_held(name)
        stages = [stage for stage, present in ((SENDS, values),
                                               (SEND_BARRIER, batch.send_barrier),
                                               (GETS, batch.get_varnames),
                                               (FETCH_BARRIER, batch.fetch_barrier)) if present]
        if self.mode == SYNC and not batch.send_barrier and stages \
                and stages[0] in _SENDING and stages[-1] not in _SENDING:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                f"{self.where}: {call.method}", "a batch that sends and gets (sync mode)",
                "send_barrier set between them", "no send barrier: the round could not "
                "turn before its gets"))
        call.value, call.stages = values, stages

    def _check_plain(self, name, field):
        """A batch names variables only: the barriers are its flags."""
        if not name or name in messages.CONTROL_NAMES:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                f"{self.where}: {pb.BATCH_METHOD}", f"{field} entry", "a variable name "
                "(barriers are the batch's send_barrier and fetch_barrier flags)", repr(name)))

    def _check_held(self, name):
        if self.scope.find_var(name) is None and not self.global_block.has_var(name):
            raise Refused(grpc.StatusCode.NOT_FOUND, expected(
                self.where, f"variable '{name}'", "one the server holds", "a name it does "
                "not know"))

    def _check_receivable(self, name):
        """A server receives what X lists, the gradients of grad_to_block_id and the other
        variables its program declares (a trainer's step counter)."""
        if name not in self.receivable and not self.global_block.has_var(name):
            shown = sorted(self.receivable)
            raise Refused(grpc.StatusCode.NOT_FOUND, expected(
                self.where, f"variable '{name}'", "one the server receives ("
                + ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "") + ")",
                "a name it does not know"))

    def _take(self, call):
        """Answer ``call`` (admitted) now, or keep it waiting for its phase."""
        now = time.monotonic()
        t = call.trainer_id
        self.last_heard[t] = now
        try:
            if call.name == messages.COMPLETE:
                self._complete(call, t)
            elif call.method == "CheckpointNotify":
                self._checkpoint_notify(call)
            elif call.method == "GetVariableNoBarrier":
                call.answer(raw=self._value(call.name[:-len(messages.WITHOUT_BARRIER)]
                                            if call.name.endswith(messages.WITHOUT_BARRIER)
                                            else call.name, t))
            elif call.method == "PrefetchVariable":
                call.answer(raw=self._prefetch(call.message, t))
            elif self.mode != SYNC:
                (self._take_batch_async if call.batch else self._take_async)(call, t)
            else:
                if self.clock is None:
                    self.clock = now
                (self._take_batch_sync if call.batch else self._take_sync)(call, t)
        except Refused as refusal:
            call.refuse(refusal.code, refusal.details)

    # --- sync ----------------------------------------------------------------------------------
    def _check_training(self, t):
        if t not in self.training:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, expected(
                self.where, f"trainer {t}", "a trainer still training",
                "one that has already sent COMPLETE@RECV"))

    def _kept_waiting(self, call, t, sending):
        """True, with ``call`` kept waiting, when what it does next (send or get) is not
        the round's phase or its trainer has passed this phase's barrier already."""
        if (self.phase == SEND) == sending and t not in self.arrived:
            return False
        self.waiting.append(call)
        if sending and self.phase == GET and self.startup and t not in self.arrived:
            self.arrived.add(t)  # a trainer with no startup fetch: it has passed it
            self._advance()
        return True

    def _take_sync(self, call, t):
        self._check_training(t)
        sending = call.method == "SendVariable"
        if self._kept_waiting(call, t, sending):
            return
        if call.name in (messages.BATCH_BARRIER, messages.FETCH_BARRIER):
            if call.name != (messages.BATCH_BARRIER if sending else messages.FETCH_BARRIER):
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                    self.where, f"{call.method} message", "a variable or the "
                    f"{'BATCH' if sending else 'FETCH'}_BARRIER@RECV control name", call.name))
            self.arrived.add(t)
            call.answer()
            self._advance()
        elif sending:
            self._write(call.name, call.value)
            call.answer()
        else:
            call.answer(raw=self._value(call.name, t))

    def _take_batch_sync(self, call, t):
        """Take the batch's parts in order while each belongs to the current phase; keep
        it waiting (from the part it reached) when one does not."""
        self._check_training(t)
        while call.stages:
            if self._kept_waiting(call, t, call.stages[0] in _SENDING):
                return
            stage = call.stages.pop(0)
            if stage == SENDS:
                for name, value in call.value:
                    self._write(name, value)
            elif stage == GETS:
                call.got = [self._encoded(name) for name in call.message.get_varnames]
            else:  # a barrier: the phase may turn, and the calls waiting for it go on
                self.arrived.add(t)
                self._advance()
        # the pieces hold the parameters' arrays: let go of them once written, so the next
        # round's optimizer may update the arrays in place
        reply, call.got = messages.batch_reply(call.got), []
        call.answer(raw=reply)

    def _take_batch_async(self, call, t):
        """Each variable applied as a SendVariable would be, then the gets answered (the
        barriers are acknowledged)."""
        for name, value in call.value:
            self._apply_async(name, value)
        call.answer(raw=messages.batch_reply(
            [self._value(name, t) for name in call.message.get_varnames]))

    def _encoded(self, name):
        """``name``'s VariableMessage pieces (messages.pieces), once per get phase (the
        values do not change until the next send phase, which lets the pieces go; every
        trainer gets the same message, trainer_id 0)."""
        found = self.encoded.get(name)
        if found is None:
            found = self.encoded[name] = messages.pieces(name, self._held(name), 0,
                                                         self.where)
        return found

    def _advance(self):
        """Turn the phase when every trainer still training has reached its barrier, and
        take the calls that were waiting for the new phase."""
        while self.training and self.arrived >= self.training:
            if self.phase == SEND:
                for b in self.optimize:
                    b.run()
                self.phase = GET
                self._saved_every()
                if status.reporter is not None:  # a round served
                    status.reporter.updated()
            else:
                self.phase, self.startup = SEND, False
                self.round += 1
            self.arrived = set()
            self.encoded = {}
            self.clock = time.monotonic()
            waiting, self.waiting = self.waiting, []
            for call in waiting:
                self._take(call)

    def _complete(self, call, t):
        self.training.discard(t)
        self.arrived.discard(t)
        self.completed.add(t)
        call.answer()
        if self.mode == SYNC:
            self._advance()

    def _check_deadline(self):
        now = time.monotonic()
        if self.mode != SYNC:
            if not self.completed:
                return
            if self.clock is None:  # silence counts from the first completion
                self.clock = now
            silent = sorted(t for t in self.training
                            if now - max(self.last_heard.get(t, 0.0), self.clock)
                            > self.deadline)
            if silent:
                raise ExecutionTimeout(expected(
                    self.where + " (async)", f"trainers {silent}",
                    f"to be heard from within {self.deadline:g} s "
                    f"(FLAGS_rpc_round_deadline) while trainers {sorted(self.completed)} "
                    f"have completed", "nothing: did they stop?"))
            return
        if self.clock is None or now - self.clock <= self.deadline:
            return
        missing = sorted(self.training - self.arrived)
        barrier = "send barriers (BATCH_BARRIER@RECV)" if self.phase == SEND \
            else "fetch barriers (FETCH_BARRIER@RECV)"
        raise ExecutionTimeout(expected(
            f"{self.where} (sync, round {self.round}, {self.phase} phase)",
            f"the {barrier} of trainers {missing}",
            f"within {self.deadline:g} s of the phase's start (FLAGS_rpc_round_deadline)",
            f"none from them (trainers {sorted(self.arrived)} arrived): did they stop?"))

    def _refuse_waiting(self, reason):
        waiting, self.waiting = self.waiting, []
        for call in waiting:
            call.refuse(grpc.StatusCode.ABORTED, reason)

    # --- async ---------------------------------------------------------------------------------
    def _take_async(self, call, t):
        if call.name in (messages.BATCH_BARRIER, messages.FETCH_BARRIER):
            call.answer()
        elif call.method == "SendVariable":
            self._apply_async(call.name, call.value)
            call.answer()
        else:
            call.answer(raw=self._value(call.name, t))

    def _apply_async(self, name, value):
        """A received gradient's optimize block run on it (a step counter: the schedule's)."""
        block = self.grad_blocks.get(name)
        if block is None and LR_DECAY_COUNTER in name and self.lr_decay is not None:
            self._count_steps(name, value)
            block = self.lr_decay
        elif block is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, expected(
                self.where, f"gradient '{name}'", "one with an optimize block "
                f"(grad_to_block_id: {sorted(self.grad_blocks)})", "none for it"))
        else:
            self._write(name, value)
        block.run()
        self.round += 1  # async: an update is a round (for the checkpoints)
        self._saved_every()
        if status.reporter is not None:  # an async update served
            status.reporter.updated()

    def _count_steps(self, name, value):
        """A trainer's step counter (``<counter>.trainer_<t>``, its steps since the last
        one): added to that trainer's total, which the schedule's block sums over the
        trainers into the global step (Paddle's notify handler keeps the same totals)."""
        self._write(name, value)
        holder = self.scope.find_var(name)
        total = self.step_totals.get(name)
        if total is not None:
            holder.value = LoDTensor(total.array + holder.value.array)
        self.step_totals[name] = holder.value

    # --- values ----------------------------------------------------------------------------------
    def _write(self, name, value):
        """Write a received value (decoded and checked when its call was admitted) into
        the server's scope."""
        # the holder the blocks read: the server scope's own for what X lists, else the
        # one the run made for the program's variable (Paddle writes what the scope finds)
        (self.scope.find_var(name) or self.scope.var(name)).value = value

    def _check_declared(self, name, value):
        """A received value must have the data type and dims the server program declares
        (-1 matches any size; a SelectedRows' rows vary). What passed once passes again
        while the program is the same (a trainer sends the same variables every step)."""
        rows = isinstance(value, SelectedRows)
        array = (value.value if rows else value).array
        key = (name, rows, array.dtype, array.shape, self.program._version)
        if key in self._fitting:
            return
        self._check_declared_afresh(name, rows, array)
        if len(self._fitting) >= 4096:  # a bound for trainers sending ever new shapes
            self._fitting.clear()
        self._fitting.add(key)

    def _check_declared_afresh(self, name, rows, array):
        var = self.global_block._find_var_recursive(name)
        if var is None:
            return
        got = convert_dtype(array.dtype)
        if var.dtype is not None and convert_dtype(var.dtype) != got:
            raise InvalidArgument(expected(f"{self.where}: variable '{name}'", "data type",
                                           convert_dtype(var.dtype).name, got.name))
        shape, dims = list(var.shape or ()), list(array.shape)
        if rows or not shape:
            return
        if len(shape) != len(dims) or any(s >= 0 and s != d for s, d in zip(shape, dims)):
            raise InvalidArgument(expected(f"{self.where}: variable '{name}'", "dims",
                                           f"{shape} (as the server declares it)", dims))

    def _prefetch(self, message, t):
        """The rows ``message`` (ids, int64) names of the table block ``table_name``, as
        Paddle's prefetch handler looks them up (answered in any phase: a trainer's
        forward pass reads the table as the last round left it)."""
        table = message.table_name
        if not table:
            raise Refused(grpc.StatusCode.UNIMPLEMENTED, expected(
                self.where, "PrefetchVariable's table_name", "the table block to read "
                "(prefetch blocks are not supported)", "''"))
        holder = self.scope.find_var(table)
        rows = getattr(holder.value, "array", None) if holder is not None else None
        if rows is None or rows.ndim != 2:
            raise Refused(grpc.StatusCode.NOT_FOUND, expected(
                self.where, f"table '{table}'", "a [rows, width] tensor the server holds",
                "none" if rows is None else list(rows.shape)))
        try:
            ids = messages.decode(message, self.where).array
        except FluidError as exc:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        if ids.dtype.kind not in "iu":
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, expected(
                f"{self.where}: prefetch from '{table}'", "ids", "integers", ids.dtype))
        flat = ids.reshape(-1).astype("int64")
        if flat.size and (flat.min() < 0 or flat.max() >= rows.shape[0]):
            raise Refused(grpc.StatusCode.OUT_OF_RANGE, expected(
                f"{self.where}: prefetch from '{table}'", "ids",
                f"rows in [0, {rows.shape[0]})", f"{int(flat.min())}..{int(flat.max())}"))
        return messages.serialize(message.out_varname or table, LoDTensor(rows[flat]), t,
                                  where=self.where)

    def _value(self, name, t):
        """The serialized VariableMessage of the server's value of ``name`` (for trainer
        ``t``)."""
        return messages.serialize(name, self._held(name), t, where=self.where)

    def _held(self, name):
        """The server's value of ``name`` (NOT_FOUND when it holds none)."""
        holder = self.scope.find_var(name)
        value = holder.value if holder is not None else None
        if not isinstance(value, (LoDTensor, SelectedRows)) or \
                (isinstance(value, LoDTensor) and value.array is None):
            raise Refused(grpc.StatusCode.NOT_FOUND, expected(
                self.where, f"variable '{name}'", "one the server holds a value of",
                "none" if holder is None else "a variable with no value"))
        return value
