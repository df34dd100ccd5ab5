"""Parameter-server training over gRPC: the run time of Fluid 1.x's distributed programs.

``fluid.DistributeTranspiler`` splits a program into a trainer program (``send``,
``send_barrier``, ``recv``, ``fetch_barrier`` around the forward and backward) and a
server program (``listen_and_serv`` and its optimize blocks); this package runs them
between real processes on real ``ip:port`` endpoints:

- ``send_recv.proto``: Paddle's ``SendRecvService`` and ``VariableMessage`` (varname, type,
  data_type, dims, lod, serialized bytes, rows, trainer_id ...), served by gRPC (grpcio)
  through generic handlers, plus fluid_nb's ``SendAndGetVariables`` (a ``VariableBatch``: a
  trainer's sync step with one server in one call);
- :mod:`.messages`: a variable as a message and back, checked whole;
- :mod:`.client`: the trainer's calls, one channel per endpoint, a deadline on each,
  retries while servers start, typed errors naming the endpoint and the variable;
- :mod:`.rpc_server`, :mod:`.listen_and_serv`: ``listen_and_serv``'s server and its loop
  (sync rounds between barriers, async updates, a round deadline that names trainers that
  stopped);
- :mod:`.kernels`: the ops' kernels, attached to their definitions on import;
- :mod:`.exchange`: which of a block's RPC ops travel together (a sync step's sends,
  barrier, recvs and fetch barrier as one call per server);
- :mod:`.launcher`: ``fluid-nb launch``, which starts servers and trainers with the
  ``PADDLE_*`` environment Fluid's launchers set (:class:`~.launcher.LocalJob`: the job
  started without blocking, its servers restarted from their checkpoints);
- :mod:`.checkpoint`: a server's shard of the training state, written whole or not at all;
- :func:`launch` (:mod:`.start`): the same from Python, on this machine or on a Ray cluster
  (:mod:`.ray_launch`: Ray places, starts, watches and stops the processes; imported only
  for ``ray=``).

A trainer's ``exe.close()`` sends ``COMPLETE@RECV`` to the servers it has talked to; a
server's ``exe.run(pserver_program)`` returns once all its trainers have.
"""
from ..exec.executor import Executor
from . import kernels
from .client import client, send_complete  # noqa: F401
from .start import launch  # noqa: F401

kernels.attach()
Executor.close_hooks.append(lambda executor: send_complete())
