"""The trainer's side of the RPC: calls to the parameter servers' ``SendRecvService``.

One gRPC channel per endpoint per process (:func:`client` is the process's one client, as
Paddle's ``RPCClient::GetInstance``). Every call has a deadline, ``FLAGS_rpc_deadline`` ms,
retries included. A call that finds the server unavailable is tried again after a pause
that doubles (50 ms up to 1 s): until the deadline while the endpoint has never answered
(a trainer usually starts before its servers listen); once it has, for
``FLAGS_rpc_reconnect_deadline`` ms (default 60000) from the first failure, and at least
``FLAGS_rpc_retry_times`` times: a server that answered and went away may be started again
on its endpoint from its checkpoint (``fluid-nb launch --max-restarts``), and the call,
a sync step's whole batch included, is made to it again. What cannot be done raises a
typed error naming the method, the endpoint and the variable:

- ``Unavailable``: the server cannot be reached, or stopped serving (its reason, which it
  sends with ABORTED, quoted);
- ``ExecutionTimeout``: no answer within the deadline;
- the server's refusals as the matching kind: ``InvalidArgument`` (a malformed message),
  ``NotFound`` (a variable it does not hold or receive), ``Unimplemented`` ...

Several calls go out at once (:meth:`RPCClient.call_all`: a step's gradients to their
servers): the first from the caller's thread, the others from threads the client keeps.
:meth:`RPCClient.exchange` is a trainer's whole step with one server in one call
(``SendAndGetVariables``: its gradients, in sync mode its send barrier, the parameters it
gets, in sync mode its fetch barrier), to each server at once. Messages are built and
values decoded by the caller's thread; gRPC only moves bytes, so the values a kernel sees
are made where the kernel runs.
"""
import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc

from .. import flags
from ..errors import (ExecutionTimeout, FluidError, InvalidArgument, NotFound, OutOfRange,
                      PreconditionNotMet, ResourceExhausted, Unavailable, Unimplemented,
                      expected)
from . import messages, status
from . import send_recv_pb2 as pb

CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    # gRPC waits 1 s and more before connecting again after a failure; a trainer waiting
    # for its servers to start should see them soon after they listen
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]

#: the server's status codes and the errors they become here
_REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
    grpc.StatusCode.FAILED_PRECONDITION: PreconditionNotMet,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}


def _seconds(flag_ms):
    return max(float(flags.flag(flag_ms)), 1.0) / 1000.0


class RPCClient:
    """Calls ``SendVariable`` / ``GetVariable`` ... on servers named by ``ip:port``.

    ``sent_bytes`` and ``received_bytes`` count the messages' bytes (requests and
    replies) since the client was made, ``calls`` the calls made by method (retries of a
    call not counted again)."""

    def __init__(self, trainer_id=0):
        #: the trainer id the kernels' messages carry
        self.trainer_id = trainer_id
        self._lock = threading.Lock()
        self._channels = {}
        self._methods = {}
        #: endpoint -> the trainer id of the last call it answered
        self._reached = {}
        self.sent_bytes = 0
        self.received_bytes = 0
        self.calls = collections.Counter()
        self._pool = None  # the threads that make a call_all's calls after the first

    # --- calls ----------------------------------------------------------------------------
    # the calls below carry ``trainer_id``, by default the client's
    def send_variable(self, endpoint, name, value, trainer_id=None):
        """Hand ``value`` to the server as variable ``name``."""
        self.call(endpoint, "SendVariable", messages.encode(
            name, value, self._id(trainer_id), where=f"send to {endpoint}"))

    def get_variable(self, endpoint, name, trainer_id=None, barrier=True):
        """The server's value of variable ``name`` (in sync mode, once this step's
        optimization has run; ``barrier=False``: at once)."""
        method = "GetVariable" if barrier else "GetVariableNoBarrier"
        asked = name if barrier else name + messages.WITHOUT_BARRIER
        reply = self.call(endpoint, method, messages.request(asked, self._id(trainer_id)),
                          name)
        return messages.decode(pb.VariableMessage.FromString(reply),
                               f"{method} from {endpoint}")

    def exchange(self, batches):
        """``{endpoint: [values got]}`` for ``{endpoint: (sent, send_barrier, get_names,
        fetch_barrier)}``, one ``SendAndGetVariables`` call per endpoint, all at once:
        ``sent`` (``[(name, VariableMessage bytes or pieces)]``) handed over, then
        (``send_barrier``) the send barrier, then the values of ``get_names`` (in sync
        mode once the server's round has optimized), then (``fetch_barrier``) the fetch
        barrier. The replies are checked to hold exactly the names asked, in order, and
        decoded here."""
        requests, asked = [], []
        for endpoint, (sent, send_barrier, get_names, fetch_barrier) in batches.items():
            payload = messages.batch_request(self.trainer_id, [one for _, one in sent],
                                             send_barrier, get_names, fetch_barrier)
            names = [name for name, _ in sent] + ([messages.BATCH_BARRIER] * send_barrier) \
                + list(get_names) + ([messages.FETCH_BARRIER] * fetch_barrier)
            requests.append((endpoint, pb.BATCH_METHOD, payload, names))
            asked.append((endpoint, list(get_names)))
        replies = self.call_all(requests)
        return {endpoint: messages.decode_batch(reply, names,
                                                f"{pb.BATCH_METHOD} from {endpoint}")
                for (endpoint, names), reply in zip(asked, replies)}

    def batch_barrier(self, endpoint, trainer_id=None):
        self.call(endpoint, "SendVariable", messages.control(messages.BATCH_BARRIER,
                                                             self._id(trainer_id)))

    def fetch_barrier(self, endpoint, trainer_id=None):
        self.call(endpoint, "GetVariable", messages.control(messages.FETCH_BARRIER,
                                                            self._id(trainer_id)))

    def _id(self, trainer_id):
        return self.trainer_id if trainer_id is None else trainer_id

    def send_complete(self):
        """Tell every server this process has reached that its trainer is done (Fluid's
        ``Executor.close``); a server returns from listen_and_serv once all its trainers
        are. A second call tells nobody again."""
        with self._lock:
            reached, self._reached = dict(self._reached), {}
        self.call_all([(endpoint, "SendVariable",
                        messages.control(messages.COMPLETE, trainer_id))
                       for endpoint, trainer_id in sorted(reached.items())])

    def call(self, endpoint, method, message, name=None):
        """The reply's bytes of ``method`` called with ``message`` on ``endpoint``."""
        return self.call_all([(endpoint, method, message, name)])[0]

    def call_all(self, requests):
        """The replies' bytes of ``(endpoint, method, message[, name])`` requests, all made
        at once. ``name`` (the message's varname when not given; a list for a batched call)
        is what errors name. Each call goes on alone with its retries; the first error is
        raised once every call has ended."""
        if not requests:
            return []
        limit = _seconds("FLAGS_rpc_deadline")
        start = time.monotonic()
        calls = []
        with self._lock:
            self.calls.update(request[1] for request in requests)
        for request in requests:
            endpoint, method, message = request[:3]
            name = (request[3] if len(request) > 3 else None) or message.varname
            # a message, or its bytes already written (the client's own trainer id's)
            payload = message if isinstance(message, bytes) else message.SerializeToString()
            calls.append((endpoint, method, name, payload, self._method(endpoint, method)))
        # the first call is made by this thread, the others by the client's callers (threads
        # kept for its life): a gRPC future starts a thread of its own to wait on each time
        others = [self._callers().submit(self._attempt, call, start, limit)
                  for call in calls[1:]]
        outcomes = [self._attempt(calls[0], start, limit)] + [o.result() for o in others]
        replies, error = [], None
        for request, call, (reply, failure) in zip(requests, calls, outcomes):
            if failure is None:
                self._answered(call[0], request[2], call[3], reply)
            error = error or failure
            replies.append(reply)
        if error is not None:
            raise error
        return replies

    def _attempt(self, call, start, limit):
        """``(reply bytes, None)`` of one call with its retries, or ``(None, error)``."""
        endpoint, method, name, payload, stub = call
        try:
            return stub(payload, timeout=limit), None
        except grpc.RpcError as exc:
            try:
                return self._retry(exc, endpoint, method, name, payload, stub, start,
                                   limit), None
            except FluidError as failure:
                return None, failure

    def _callers(self):
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=32,
                                                thread_name_prefix="fluid_nb-rpc-client")
            return self._pool

    def _retry(self, exc, endpoint, method, name, payload, stub, start, limit):
        """After the first try failed with ``exc``: try again while the server is unavailable
        (until the deadline if the endpoint never answered, else FLAGS_rpc_retry_times
        times and for FLAGS_rpc_reconnect_deadline), pausing 50 ms, 100 ms ... up to 1 s in
        between."""
        retries = int(flags.flag("FLAGS_rpc_retry_times"))
        reconnect = max(float(flags.flag("FLAGS_rpc_reconnect_deadline")), 0.0) / 1000.0
        end, failed = start + limit, time.monotonic()
        tries, pause = 1, 0.05
        while True:
            code, left = exc.code(), end - time.monotonic()
            if code != grpc.StatusCode.UNAVAILABLE or left <= 0.02 \
                    or (endpoint in self._reached and tries > retries
                        and time.monotonic() - failed >= reconnect):
                raise self._error(exc, endpoint, method, name, tries,
                                  time.monotonic() - start, limit) from None
            time.sleep(min(pause, left - 0.01))
            pause = min(pause * 2, 1.0)
            tries += 1
            try:
                return stub(payload, timeout=max(end - time.monotonic(), 0.001))
            except grpc.RpcError as again:
                if again.code() == grpc.StatusCode.DEADLINE_EXCEEDED and \
                        endpoint not in self._reached:
                    # the deadline ran out on a try at a server that never answered (the
                    # connection still being refused): it is unavailable, not slow
                    raise self._error(exc, endpoint, method, name, tries,
                                      time.monotonic() - start, limit) from None
                exc = again

    def _answered(self, endpoint, message, payload, reply):
        with self._lock:
            # a server told COMPLETE@RECV has this trainer no more (it may end at once)
            if getattr(message, "varname", None) != messages.COMPLETE:
                self._reached[endpoint] = getattr(message, "trainer_id", self.trainer_id)
            self.sent_bytes += len(payload)
            self.received_bytes += len(reply)
        if status.reporter is not None:  # the job's status file: bytes per server
            status.reporter.exchanged(endpoint, len(payload), len(reply))

    # --- channels ---------------------------------------------------------------------------
    def _method(self, endpoint, method):
        key = (endpoint, method)
        found = self._methods.get(key)
        if found is not None:
            return found
        with self._lock:
            channel = self._channels.get(endpoint)
            if channel is None:
                channel = self._channels[endpoint] = grpc.insecure_channel(
                    _checked_endpoint(endpoint, method), options=CHANNEL_OPTIONS)
            found = self._methods[key] = channel.unary_unary(f"/{pb.SERVICE}/{method}")
        return found

    def close(self):
        """Close the channels and end the callers' threads (a later call opens and starts
        them again)."""
        with self._lock:
            channels, self._channels, self._methods = self._channels, {}, {}
            pool, self._pool = self._pool, None
        for channel in channels.values():
            channel.close()
        if pool is not None:
            pool.shutdown(wait=False)

    @staticmethod
    def _error(exc, endpoint, method, name, tries, spent, limit):
        code, details = exc.code(), exc.details() or ""
        where = f"{method} to {endpoint}, {_named(name)}"
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ExecutionTimeout(expected(
                where, "an answer", f"within {limit:g} s (FLAGS_rpc_deadline)",
                f"none after {spent:.1f} s"))
        if code == grpc.StatusCode.UNAVAILABLE:
            return Unavailable(expected(
                where, "the parameter server", "to be reachable and serving",
                f"no answer after {tries} tries in {spent:.1f} s ({details})"))
        kind = _REFUSALS.get(code)
        if kind is not None:
            return kind(f"{where}: the server refused it: {details}")
        if code == grpc.StatusCode.ABORTED:  # the server stopped, and says why
            return Unavailable(f"{where}: the server stopped serving: {details}")
        return Unavailable(f"{where}: the server failed to answer ({code.name}: {details})")


def _named(name):
    """What an error says a call was about: its variable, or a batch's first variable and
    the others (barriers included) in their order."""
    if isinstance(name, str):
        return f"variable '{name}'"
    first, rest = (name[0], name[1:]) if name else ("", [])
    shown = ", ".join(rest[:6]) + (f" and {len(rest) - 6} more" if len(rest) > 6 else "")
    return f"variable '{first}'" + (f" (with {shown})" if rest else "")


def _checked_endpoint(endpoint, where):
    host, _, port = endpoint.rpartition(":") if isinstance(endpoint, str) else ("", "", "")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidArgument(expected(where, "endpoint", "'ip:port' (port 1-65535)",
                                       repr(endpoint)))
    return endpoint


_client = None
_client_lock = threading.Lock()


def client(trainer_id=0):
    """The process's RPC client, made on first use for trainer ``trainer_id``.

    As Paddle's ``RPCClient::GetInstance(trainer_id)``, the first call fixes the trainer id
    the process's messages carry: Fluid 1.8's transpiler leaves ``send``'s ``trainer_id`` at
    0, and the trainer's startup ``recv``, which runs first, carries the real one."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = RPCClient(trainer_id)
    return _client


def send_complete():
    """``exe.close()`` on a trainer: tell the servers it has reached that it is done."""
    if _client is not None:
        _client.send_complete()
