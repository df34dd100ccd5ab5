"""``fluid_nb.distributed.launch``: start a parameter-server job on this machine or on a
Ray cluster, from a notebook or a script.

    from fluid_nb.distributed import launch
    launch("train.py", ["--steps", "20"], pservers=2, trainers=2)               # here
    launch("train.py", pservers=2, trainers=2, ray="auto")                      # RAY_ADDRESS
    job = launch("train.py", ray="10.0.0.1:6379", wait=False); job.status()     # a Job

``ray=None`` starts the processes on this machine (:class:`.launcher.LocalJob`, as
``fluid-nb launch`` does); any other value runs them on a Ray cluster
(:class:`.ray_launch.RayJob`): ``"auto"`` the cluster ``RAY_ADDRESS`` names, ``"local"``
the one this process is connected to or a new one started here, any other string a Ray
address. Ray is imported only then.
"""
import os

from ..errors import InvalidArgument, PreconditionNotMet, expected
from . import launcher


class RayNotInstalled(PreconditionNotMet, ImportError):
    """``ray=`` was given where Ray cannot be imported."""


def launch(script, args=(), *, pservers=2, trainers=2, ray=None, max_restarts=0,
           checkpoint_every=None, log_dir=None, out=None, wait=True, timeout=None):
    """Start ``script args`` as ``pservers`` parameter servers and ``trainers`` trainers.

    ``wait=True``: block until the job ends and return each trainer's exit status (a
    list); a process that fails stops the job and raises
    :class:`~fluid_nb.distributed.job.JobFailed`, and ``timeout`` seconds passing first
    stop it and raise ``ExecutionTimeout``. ``wait=False``: return the running
    :class:`~fluid_nb.distributed.job.Job`. ``max_restarts`` servers' restarts (from their
    checkpoints, written every ``checkpoint_every`` rounds); ``log_dir`` keeps each
    process's output; ``out`` (default ``sys.stdout``) gets every line, prefixed."""
    if ray is None:
        processes, _ = launcher.plan(pservers, trainers)
        job = launcher.LocalJob(processes, script, list(args), log_dir=log_dir, out=out,
                                max_restarts=max_restarts, checkpoint_every=checkpoint_every)
    else:
        job = _ray_job(script, args, pservers, trainers, ray, max_restarts, checkpoint_every,
                       log_dir, out)
    if not wait:
        return job
    try:
        return job.wait(timeout)
    except BaseException:  # a timeout, Ctrl-C, SystemExit: the job ends with the call
        job.stop()
        raise


def _ray_job(script, args, pservers, trainers, address, max_restarts, checkpoint_every,
             log_dir, out):
    if not isinstance(address, str) or not address:
        raise InvalidArgument(expected("launch", "ray", 'None, "auto", "local" or a Ray '
                                       "address", repr(address)))
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS")
        if not address:
            raise InvalidArgument(expected(
                "launch", "ray='auto'", "RAY_ADDRESS set to the cluster's address (`ray "
                "start --head` prints it)", "no RAY_ADDRESS in the environment"))
    try:
        from .ray_launch import RayJob
    except ImportError as error:
        name = getattr(error, "name", None) or ""
        if name and name != "ray" and not name.startswith("ray."):
            raise  # Ray is there; something it or fluid_nb imports is not
        raise RayNotInstalled(
            'launch: ray expected Ray installed to run the job on a cluster, but received '
            f'"{error}"; install it with `pip install "fluid_nb[ray]"` (or `pip install '
            'ray`)') from error
    return RayJob(script, list(args), pservers=pservers, trainers=trainers, address=address,
                  max_restarts=max_restarts, checkpoint_every=checkpoint_every,
                  log_dir=log_dir, out=out)
