"""The server's side of the RPC: a gRPC server for ``SendRecvService`` on one endpoint.

gRPC's threads only parse the request and wait: each call becomes a :class:`Call` put in
``inbox``, and the serving loop (:mod:`fluid_nb.distributed.pserver`, in the thread that
runs ``listen_and_serv``) answers it, so values are decoded, written and read in one thread
while the optimize blocks run there too. A call waits no longer than its own deadline; a
request that does not parse as a ``VariableMessage`` is refused with INVALID_ARGUMENT
before it reaches the loop. Once the server stops, every call waiting or arriving is
refused with ABORTED and the reason it stopped (not UNAVAILABLE, which a client tries
again: the reason would be lost).
"""
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.protobuf.message import DecodeError

from ..errors import Unavailable, expected
from . import send_recv_pb2 as pb
from .client import CHANNEL_OPTIONS

_SERVER_OPTIONS = CHANNEL_OPTIONS[:2] + [
    # two servers must not share a port unnoticed (gRPC sets SO_REUSEPORT by default)
    ("grpc.so_reuseport", 0),
]


class Call:
    """One request waiting for the serving loop; ``answer`` or ``refuse`` ends it."""

    __slots__ = ("method", "message", "done", "reply", "code", "details")

    def __init__(self, method, message):
        self.method = method
        self.message = message
        self.done = threading.Event()
        self.reply = b""
        self.code = None
        self.details = ""

    @property
    def trainer_id(self):
        return self.message.trainer_id

    @property
    def name(self):
        return self.message.varname

    def answer(self, message=None):
        self.reply = message.SerializeToString() if message is not None else b""
        self.done.set()

    def refuse(self, code, details):
        self.code, self.details = code, details
        self.done.set()


class RPCServer:
    """Listens on ``endpoint``; the calls arrive in ``inbox`` for the serving loop."""

    def __init__(self, endpoint, workers=16):
        self.endpoint = endpoint
        self.inbox = queue.Queue()
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
        def handle(payload, context):
            if self._stopped is not None:
                context.abort(grpc.StatusCode.ABORTED, self._stopped)
            try:
                message = pb.VariableMessage.FromString(payload)
            except DecodeError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, expected(
                    f"listen_and_serv at {self.endpoint}: {method}", "request",
                    "a VariableMessage", f"{len(payload)} bytes that do not parse as one "
                    f"({exc})"))
            call = Call(method, message)
            self.inbox.put(call)
            if self._stopped is not None:  # stopped while it was put: nobody will answer
                context.abort(grpc.StatusCode.ABORTED, self._stopped)
            if not call.done.wait(context.time_remaining()):
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              f"listen_and_serv at {self.endpoint}: no answer to {method} "
                              f"'{call.name}' within the caller's deadline")
            if call.code is not None:
                context.abort(call.code, call.details)
            return call.reply
        return handle

    def stop(self, reason, grace=1.0):
        """Refuse every call waiting or to come with ABORTED ``reason``; end the
        server once the answered calls have gone out (``grace`` seconds at most)."""
        self._stopped = reason
        while True:
            try:
                call = self.inbox.get_nowait()
            except queue.Empty:
                break
            call.refuse(grpc.StatusCode.ABORTED, reason)
        self._server.stop(grace).wait()
