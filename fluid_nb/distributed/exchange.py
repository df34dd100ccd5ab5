"""A trainer's step as one call per server: which RPC ops of a block travel together.

Fluid 1.8's transpiler writes a sync trainer step as one ``send`` per gradient (among the
backward ops), a ``send_barrier``, one ``recv`` per parameter and a ``fetch_barrier``: four
rounds of calls, one call per variable. The programs stay as Fluid writes them; their
kernels go together instead. :func:`role_of` reads the op's block once per program version
(:class:`Plan`) and groups, around each ``send_barrier`` (not half-async's):

- the ``send`` ops before it (back to the previous recv, barrier or fetch op) whose endpoints
  it names: they do not call; each writes its messages where it runs and leaves them with
  the barrier (*deferred*). A message's elements stay the value's own array until the
  barrier's call copies them: no op writes a value it did not make in place (the
  executor's in-place updates take an array only while nothing else holds it, and the
  queued message does), so the call carries the values as they were when sent;
- the ``recv`` ops right after it (with the barrier, not ``do_not_run``) when it names
  every endpoint they name, and the ``fetch_barrier`` right after them (*taken*).

The barrier (*leading*) then makes one ``SendAndGetVariables`` call per endpoint it names,
all at once (:meth:`~fluid_nb.distributed.client.RPCClient.exchange`): the gradients queued
for that server, the send barrier, the parameters the recvs want from it, the fetch
barrier. A server takes them in that order, as it would the separate calls, so the
parameters come back once its round has optimized, and the trainer's fetch barrier counts
only after it got them. The recvs then take their values from the barrier's calls, and the
fetch barrier calls only the endpoints it names that the barrier did not cover. A step of
``S`` servers is ``S`` calls, made at once.

An async step (no send barrier: each gradient is applied when its server gets it, a get
answers the parameter as it is) goes together the same way: the sends since the last RPC
op that ends a group are deferred, and the run of recvs that follows them (``with_barrier``,
not ``do_not_run``) is taken; its first recv (*leading*) makes one call per server the
group names, without barriers: the server applies the gradients it carries, in order, as
the separate sends, then answers the gets, as the separate recvs after them. The step's
gradients reach the servers once the backward pass is done rather than while it runs, which
async mode allows (Fluid's own async communicator sends them later still).

Ops the plan does not group call as they always did: a recv without sends before it (the
startup's), a send to a server its barrier does not name, sends no recv follows, a
half-async barrier's step.

What the ops leave for each other is kept per thread (:class:`_Left`), by op: a run that
fails between a deferred send and its barrier leaves nothing behind, since the first send
of the group starts the group afresh and the barrier clears what its followers would take.
"""
import threading
import weakref

from . import messages

DEFERRED, LEADING, TAKEN = "deferred", "leading", "taken"


class Exchange:
    """One step's group: the ops it carries and, per endpoint, what it gets."""

    __slots__ = ("endpoints", "barrier", "sends", "targets", "recvs", "gets", "fetch",
                 "fenced")

    def __init__(self, endpoints, barrier=True):
        #: the barrier's endpoints, in its order (async: the sends', then the recvs'): one
        #: call each
        self.endpoints = endpoints
        #: whether the calls carry the send barrier (sync) or not (async)
        self.barrier = barrier
        #: the deferred send ops, in program order
        self.sends = []
        #: a deferred send of whole variables -> its ``[(endpoint, name)]``, one per input X
        #: (a send of row pieces, or a notice, finds its own)
        self.targets = {}
        #: the taken recv ops and their ``[(endpoint, name)]`` sources
        self.recvs = []
        #: endpoint -> the names its call gets (the recvs' sources, in order)
        self.gets = {endpoint: [] for endpoint in endpoints}
        #: the taken fetch_barrier op (or None) and the endpoints the calls tell for it
        self.fetch, self.fenced = None, frozenset()


class Plan:
    """A block's RPC ops grouped into exchanges: ``roles`` maps an op to
    ``(DEFERRED | LEADING | TAKEN, exchange)``; ops not in it call on their own."""

    def __init__(self, ops):
        self.roles = {}
        pending = []  # send ops since the last op that ends a group
        for index, op in enumerate(ops):
            kind = op.type
            if kind == "send":
                if send_endpoints(op):
                    pending.append(op)
            elif kind == "send_barrier":
                if not op.attrs.get("half_async", False):
                    self._group(op, pending, ops, index)
                pending = []
            elif kind == "recv":
                if pending and op not in self.roles:
                    self._group_async(pending, ops, index)
                pending = []
            elif kind in _ENDS_GROUP:
                pending = []

    def _group(self, barrier, pending, ops, index):
        endpoints = list(barrier.attrs.get("endpoints") or ())
        if not endpoints or len(set(endpoints)) != len(endpoints):
            return
        exchange, named = Exchange(endpoints), set(endpoints)
        self.roles[barrier] = (LEADING, exchange)
        for send in pending:
            if send.attrs.get("use_send_handler", True) and set(send_endpoints(send)) <= named:
                exchange.sends.append(send)
                self.roles[send] = (DEFERRED, exchange)
                _target(exchange, send)
        after = index + 1
        while after < len(ops) and ops[after].type == "recv":
            sources = recv_sources(ops[after])
            if sources is None or not ops[after].attrs.get("with_barrier", True) \
                    or ops[after].attrs.get("do_not_run", 0) \
                    or any(endpoint not in named for endpoint, _ in sources):
                break
            exchange.recvs.append((ops[after], sources))
            for endpoint, name in sources:
                exchange.gets[endpoint].append(name)
            self.roles[ops[after]] = (TAKEN, exchange)
            after += 1
        if after < len(ops) and ops[after].type == "fetch_barrier":
            exchange.fetch = ops[after]
            exchange.fenced = frozenset(ops[after].attrs.get("endpoints") or ()) & named
            self.roles[ops[after]] = (TAKEN, exchange)

    def _group_async(self, pending, ops, index):
        """The run of recvs from ``ops[index]`` with the sends before it: one call per
        endpoint they name, led by the first recv (nothing when no recv can be taken)."""
        recvs, after = [], index
        while after < len(ops) and ops[after].type == "recv":
            sources = recv_sources(ops[after])
            if sources is None or not ops[after].attrs.get("with_barrier", True) \
                    or ops[after].attrs.get("do_not_run", 0):
                break
            recvs.append((ops[after], sources))
            after += 1
        if not recvs:
            return
        named = [endpoint for send in pending for endpoint in send_endpoints(send)]
        named += [endpoint for _, sources in recvs for endpoint, _ in sources]
        exchange = Exchange(list(dict.fromkeys(named)), barrier=False)
        for send in pending:
            exchange.sends.append(send)
            self.roles[send] = (DEFERRED, exchange)
            _target(exchange, send)
        for op, sources in recvs:
            exchange.recvs.append((op, sources))
            for endpoint, name in sources:
                exchange.gets[endpoint].append(name)
            self.roles[op] = (TAKEN, exchange)
        self.roles[recvs[0][0]] = (LEADING, exchange)


def _target(exchange, send):
    """Note where a deferred send of whole variables sends each (see Exchange.targets)."""
    if send.attrs.get("use_send_handler", True) and not send.attrs.get("send_varnames"):
        exchange.targets[send] = list(zip(send_endpoints(send), send.inputs.get("X", [])))


#: RPC ops a deferred send must not be carried past: they call on their own
_ENDS_GROUP = ("fetch_barrier", "distributed_lookup_table", "checkpoint_notify")


def send_endpoints(op):
    """The endpoints a send op calls (None when its attributes do not say one per value:
    its kernel then refuses it on its own; a notice, ``use_send_handler`` false, goes to
    every endpoint of ``epmap``)."""
    epmap = list(op.attrs.get("epmap") or ())
    names = list(op.attrs.get("send_varnames") or ())
    if not op.attrs.get("use_send_handler", True) and not names:
        return epmap or None
    wanted = len(names) if names else len(op.inputs.get("X", []))
    return epmap if epmap and len(epmap) == wanted else None


def recv_sources(op):
    """A recv op's ``[(endpoint, name)]``: ``recv_varnames`` from ``epmap`` (pieces of
    Out[0]), else ``varnames`` (default Out) from ``epmap``; None when the attributes do
    not match (its kernel then refuses it on its own)."""
    attrs = op.attrs
    epmap = list(attrs.get("epmap") or ())
    pieces = list(attrs.get("recv_varnames") or ())
    if pieces:
        return list(zip(epmap, pieces)) if len(epmap) == len(pieces) else None
    outs = op.outputs.get("Out", [])
    names = list(attrs.get("varnames") or ()) or outs
    if len(names) != len(outs) or len(epmap) != len(outs):
        return None
    return list(zip(epmap, names))


_plans = weakref.WeakKeyDictionary()
_plans_lock = threading.Lock()


def role_of(op):
    """``(role, exchange)`` of ``op`` in its block's plan, or None: the op calls alone."""
    block = getattr(op, "block", None)
    if block is None:
        return None
    version = block.program._version
    found = _plans.get(block)
    if found is None or found[0] != version:
        found = (version, Plan(block.ops))
        with _plans_lock:
            _plans[block] = found
    return found[1].roles.get(op)


class _Left(threading.local):
    """What one thread's ops leave for later ops of the same run."""

    def __init__(self):
        #: exchange -> endpoint -> ``[(name, VariableMessage pieces)]`` its deferred sends
        #: wrote (see messages.pieces)
        self.queued = {}
        #: taken recv op -> its values; taken fetch_barrier op -> the endpoints told
        self.taken = {}


_left = _Left()


def defer(op, exchange, jobs, trainer_id):
    """A deferred send's ``(endpoint, name, value)`` jobs, written now, queued for the
    barrier's calls (the group's first send starts the queue afresh)."""
    queued = _left.queued
    if op is exchange.sends[0] or exchange not in queued:
        queued[exchange] = {}
    per_endpoint = queued[exchange]
    for endpoint, name, value in jobs:
        per_endpoint.setdefault(endpoint, []).append((name, messages.pieces(
            name, value, trainer_id, f"send to {endpoint}")))


def lead(rpc, exchange):
    """The group's calls: per endpoint, what was queued, the barrier (sync), the gets and
    the fetch barrier; the values got are left for the recvs, the endpoints told for the
    fetch barrier. An async group calls only the endpoints it has something for."""
    queued = _left.queued.pop(exchange, {})
    taken = _left.taken
    for op, _ in exchange.recvs:
        taken.pop(op, None)
    if exchange.fetch is not None:
        taken.pop(exchange.fetch, None)
    barrier, gets = exchange.barrier, exchange.gets
    got = rpc.exchange({endpoint: (queued.get(endpoint, ()), barrier, gets[endpoint],
                                   endpoint in exchange.fenced)
                        for endpoint in exchange.endpoints
                        if barrier or gets[endpoint] or endpoint in queued})
    values = {endpoint: iter(found) for endpoint, found in got.items()}
    for op, sources in exchange.recvs:
        taken[op] = [next(values[endpoint]) for endpoint, _ in sources]
    if exchange.fetch is not None:
        taken[exchange.fetch] = exchange.fenced


def take(op):
    """What the group's leader left for ``op`` (a recv's values, a fetch barrier's
    endpoints told), once; None when it left nothing (the op then calls on its own)."""
    return _left.taken.pop(op, None)
