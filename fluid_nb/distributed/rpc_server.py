"""The server's side of the RPC: a gRPC server for ``SendRecvService`` on one endpoint.

Each request that parses as its method's message (a ``VariableMessage``; a
``VariableBatch`` for ``SendAndGetVariables``) becomes a :class:`Call` handed, in the
gRPC thread that received it, to ``take`` (the serving loop's, in
:mod:`fluid_nb.distributed.listen_and_serv`), which answers it at once or keeps it until its phase
comes; the thread waits for the answer no longer than the caller's deadline (the trainers'
``FLAGS_rpc_deadline`` for a caller that set none). A request that does not parse is
refused with INVALID_ARGUMENT before it reaches the loop, and the loop admits the others
one by one (see :meth:`~fluid_nb.distributed.listen_and_serv.ParameterServer._admit`). Refusals
that mean the server has stopped use ABORTED with the reason (not UNAVAILABLE, which a
client tries again: the reason would be lost).
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.protobuf.message import DecodeError

from .. import flags
from ..errors import Unavailable, expected
from . import messages, status
from . import send_recv_pb2 as pb
from .client import CHANNEL_OPTIONS

_SERVER_OPTIONS = CHANNEL_OPTIONS[:2] + [
    # two servers must not share a port unnoticed (gRPC sets SO_REUSEPORT by default)
    ("grpc.so_reuseport", 0),
]


class Call:
    """One request waiting for the serving loop; ``answer`` or ``refuse`` ends it."""

    __slots__ = ("method", "message", "name", "batch", "value", "stages", "got", "done",
                 "reply", "code", "details")

    def __init__(self, method, message):
        self.method = method
        self.message = message
        #: a SendAndGetVariables call: a trainer's exchange of one step
        self.batch = method == pb.BATCH_METHOD
        #: the variable it is about (a batch: what it carries, in order, as errors say it)
        self.name = message.varname if not self.batch else \
            ", ".join(messages.batch_names(message)) or "(an empty batch)"
        #: the value a SendVariable carries (a batch: its ``[(name, value)]``), once the
        #: server has decoded and checked it
        self.value = None
        #: a batch's parts still to take, in order, and the serialized values it got
        self.stages, self.got = [], []
        self.done = threading.Event()
        self.reply = b""
        self.code = None
        self.details = ""

    @property
    def trainer_id(self):
        return self.message.trainer_id

    def answer(self, message=None, raw=None):
        """End the call with ``message`` (or the bytes ``raw``, already serialized)."""
        self.reply = raw if raw is not None else \
            message.SerializeToString() if message is not None else b""
        self.done.set()

    def refuse(self, code, details):
        self.code, self.details = code, details
        self.done.set()


class RPCServer:
    """Listens on ``endpoint``; each call goes to ``take(call)``."""

    def __init__(self, endpoint, take, workers=16):
        self.endpoint = endpoint
        self._take = take
        self._stopped = None  # the reason, once stopped
        handlers = {name: grpc.unary_unary_rpc_method_handler(self._handler(name))
                    for name in pb.METHODS}
        self._server = grpc.server(ThreadPoolExecutor(max_workers=workers,
                                                      thread_name_prefix="fluid_nb-pserver"),
                                   handlers=[grpc.method_handlers_generic_handler(
                                       pb.SERVICE, handlers)],
                                   options=_SERVER_OPTIONS)
        try:
            port = self._server.add_insecure_port(endpoint)
        except RuntimeError as exc:
            port, reason = 0, str(exc)
        else:
            reason = "in use, or not an address of this machine"
        if not port:
            raise Unavailable(expected("listen_and_serv", "endpoint",
                                       "an address this machine can listen on",
                                       f"{endpoint} ({reason})"))
        self._server.start()

    def _handler(self, method):
        request = pb.REQUESTS[method]

        def handle(payload, context):
            if self._stopped is not None:
                context.abort(grpc.StatusCode.ABORTED, self._stopped)
            try:
                message = request.FromString(payload)
            except DecodeError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, expected(
                    f"listen_and_serv at {self.endpoint}: {method}", "request",
                    f"a {request.DESCRIPTOR.name}", f"{len(payload)} bytes that do not "
                    f"parse as one ({exc})"))
            call = Call(method, message)
            self._take(call)
            # a caller that set no deadline gets the trainers' (FLAGS_rpc_deadline): no
            # thread of the server waits for ever
            remaining = context.time_remaining()
            if remaining is None:
                remaining = max(float(flags.flag("FLAGS_rpc_deadline")), 1.0) / 1000.0
            if not call.done.wait(remaining):
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              f"listen_and_serv at {self.endpoint}: no answer to {method} "
                              f"'{call.name}' within the caller's deadline")
            if call.code is not None:
                context.abort(call.code, call.details)
            if status.reporter is not None:  # the job's status file: bytes per trainer
                status.reporter.served(call.trainer_id, len(payload), len(call.reply))
            return call.reply
        return handle

    def stop(self, reason, grace=1.0):
        """Refuse every call to come with ABORTED ``reason`` (the loop refuses those it
        keeps); end the server once the answered calls have gone out (``grace`` seconds
        at most)."""
        self._stopped = reason
        self._server.stop(grace).wait()
