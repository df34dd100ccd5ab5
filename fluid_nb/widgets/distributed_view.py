"""``DistributedView``: the trainer and server programs of a parameter-server job side by
side, one lane per process, with the ``send``/``recv`` exchanges drawn between the lanes.

It draws :func:`fluid_nb.viz.distributed_model.distributed_model` with the program view's
front end (the model is a program model: the same graph, search and details panel), and
falls back to the same model for the JupyterLab renderer, then to the listings side by side.

    t = fluid.DistributeTranspiler()
    t.transpile(0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
    DistributedView.of_transpiler(t)        # trainer 0 and both servers

A started job (:class:`fluid_nb.distributed.job.Job`: a ``LocalJob``, a Ray job) shows live
above the programs, or alone: one row per process with its node, state, steps, last loss,
bytes sent to and received from each peer, and restarts
(:func:`~fluid_nb.viz.distributed_model.job_model`)::

    job = fluid.distributed.launch("train.py", pservers=2, trainers=2, wait=False)
    DistributedView.of_job(job)             # the rows update as the job trains
    DistributedView.of_transpiler(t).attach(job)

While a job is attached, a thread of the kernel asks ``job.status()`` every ``interval``
seconds and sets the synced ``_job`` trait; it ends once every process has ended (after a
last look), or when the view is closed or detached.
"""
import threading

import traitlets

from ..errors import InvalidArgument, InvalidType, expected
from ..viz import MIME_TYPE, assemble_dot
from ..viz.distributed_model import (distributed_listing_html, distributed_model, job_html,
                                     job_model, job_rows_text)
from ._base import ViewWidget, json_clean


class DistributedView(ViewWidget):
    """The programs of a job side by side (see the module docstring). ``trainers``: trainer
    programs (a list, or {trainer id: program}); ``pservers``: {endpoint: program} or the
    server programs. Reads the programs; changes nothing."""

    _kind = traitlets.Unicode("program").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    search = traitlets.Unicode("").tag(sync=True)
    _details = traitlets.Dict().tag(sync=True)
    _memory = traitlets.Dict().tag(sync=True)
    #: the attached job's model (``job_model``), or {} when no job is attached
    _job = traitlets.Dict().tag(sync=True)

    def __init__(self, trainers=(), pservers=(), title="parameter-server job", **kwargs):
        self._trainers, self._pservers = trainers, pservers
        model = json_clean(distributed_model(trainers, pservers, title=title))
        # without programs the view is the job's panel alone
        kwargs.setdefault("_kind", "program" if model["lanes"] else "job")
        super().__init__(title=title, _model=model, **kwargs)
        self._attached = None  # the job shown, its poller thread and the event that stops it

    @classmethod
    def of_transpiler(cls, transpiler, **kwargs):
        """The view of what ``transpiler`` made: the program of the trainer it transpiled
        for and every server's program. This asks the transpiler for them, as a script
        would (``get_trainer_program(wait_port=False)`` the first time finishes the trainer
        program)."""
        if getattr(transpiler, "origin_program", None) is None:
            raise InvalidType(expected("DistributedView.of_transpiler", "transpiler",
                                           "a DistributeTranspiler after transpile()",
                                           type(transpiler).__name__))
        trainer = transpiler.get_trainer_program(wait_port=False)
        servers = {ep: transpiler.get_pserver_program(ep)
                   for ep in transpiler.pserver_endpoints}
        return cls({transpiler.trainer_id: trainer}, servers, **kwargs)

    @classmethod
    def of_job(cls, job, trainers=(), pservers=(), interval=0.5, **kwargs):
        """The view of a started ``job`` (its processes' rows, updated every ``interval``
        seconds while it runs), above its programs when ``trainers``/``pservers`` are
        given."""
        return cls(trainers, pservers, **kwargs).attach(job, interval)

    # --- a running job ----------------------------------------------------------------------
    def attach(self, job, interval=0.5):
        """Show ``job`` (anything with ``status()`` returning ProcessStatus records) and
        follow it: its rows now, then every ``interval`` seconds from a thread of the kernel
        until every process has ended or the view is closed. Replaces a job attached
        before. Returns the view."""
        if not callable(getattr(job, "status", None)):
            raise InvalidType(expected("DistributedView.attach", "job", "a started job "
                                       "(with status())", type(job).__name__))
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) \
                or not interval > 0:
            raise InvalidArgument(expected("DistributedView.attach", "interval",
                                           "seconds > 0", repr(interval)))
        self.detach()
        stop = threading.Event()
        if not self._show(job)["done"]:
            poller = threading.Thread(target=self._follow, args=(job, interval, stop),
                                      name="fluid_nb-job-view", daemon=True)
            self._attached = (job, poller, stop)
            poller.start()
        else:
            self._attached = (job, None, stop)
        return self

    def _show(self, job):
        """Set ``_job`` from ``job.status()`` now; the model set."""
        model = json_clean(job_model(job.status(), title=self.title))
        self._job = model
        return model

    def _follow(self, job, interval, stop):
        while not stop.wait(interval):
            try:
                if self._show(job)["done"]:
                    return
            except Exception as exc:  # noqa: BLE001  (a status that fails ends the polling)
                self._job = {**self._job, "error": f"{type(exc).__name__}: {exc}"}
                return

    def refresh_job(self):
        """Look at the attached job now (what the poller does each interval); its model."""
        if self._attached is None:
            raise InvalidArgument(expected("DistributedView.refresh_job", "an attached job",
                                           "attach(job) or of_job(job) first", "none"))
        return self._show(self._attached[0])

    @property
    def following(self):
        """True while a thread follows the attached job."""
        poller = self._attached[1] if self._attached else None
        return poller is not None and poller.is_alive()

    def detach(self):
        """Stop following the job (its last rows stay shown); waits for the poller."""
        attached, self._attached = self._attached, None
        if attached is None:
            return
        _, poller, stop = attached
        stop.set()
        if poller is not None and poller is not threading.current_thread():
            poller.join()

    def close(self):
        self.detach()
        super().close()

    @property
    def job_model(self):
        """The attached job's model (``{}`` before a job is attached)."""
        return self._job

    @property
    def model(self):
        """The job's model (a program model with one lane per process)."""
        return self._model

    def exchanges(self):
        """The RPC edges: (kind, from, to, variables), with lane labels for ends."""
        lanes = {op["id"]: op["lane"] for op in self._model["ops"]}
        return [(e["rpc"], lanes[e["src"]], lanes[e["dst"]], e["vars"])
                for e in self._model["edges"] if e.get("kind") == "rpc"]

    def dot(self):
        """The DOT text of the whole job (every lane a cluster)."""
        return assemble_dot(self._model)

    def _fallback_bundle(self):
        if not self._model["lanes"]:
            return {"text/html": self._repr_html_()}
        return {MIME_TYPE: self._model, "text/html": self._repr_html_(),
                "text/vnd.graphviz": self.dot()}

    def _repr_html_(self):
        """The job's rows (a table, as they were last seen) above the programs' listings."""
        parts = [job_html(self._job)] if self._job else []
        if self._model["lanes"]:
            parts.append(distributed_listing_html(self._trainers, self._pservers))
        return "".join(parts) or "<i>DistributedView: no programs and no job</i>"

    def __repr__(self):
        stats = self._model["stats"]
        shown = (f"DistributedView({', '.join(self._model['lanes'])}: {stats['ops']} ops, "
                 f"{stats['exchanges']} exchanges)") if self._model["lanes"] else \
            "DistributedView(a job)"
        if not self._job:
            return shown
        job = self._job["stats"]
        return "\n".join([f"{shown}: {job['processes']} processes, {job['running']} running, "
                          f"{job['steps']} trainer steps" + (" (done)" if self._job["done"]
                                                             else "")]
                         + ["  " + line for line in job_rows_text(self._job)])
