"""``DistributedView``: the trainer and server programs of a parameter-server job side by
side, one lane per process, with the ``send``/``recv`` exchanges drawn between the lanes.

It draws :func:`fluid_nb.viz.distributed_model.distributed_model` with the program view's
front end (the model is a program model: the same graph, search and details panel), and
falls back to the same model for the JupyterLab renderer, then to the listings side by side.

    t = fluid.DistributeTranspiler()
    t.transpile(0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
    DistributedView.of_transpiler(t)        # trainer 0 and both servers
"""
import traitlets

from ..errors import InvalidType, expected
from ..viz import MIME_TYPE, assemble_dot
from ..viz.distributed_model import distributed_listing_html, distributed_model
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

    def __init__(self, trainers=(), pservers=(), title="parameter-server job", **kwargs):
        self._trainers, self._pservers = trainers, pservers
        model = json_clean(distributed_model(trainers, pservers, title=title))
        super().__init__(title=title, _model=model, **kwargs)

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
        return {MIME_TYPE: self._model,
                "text/html": distributed_listing_html(self._trainers, self._pservers),
                "text/vnd.graphviz": self.dot()}

    def __repr__(self):
        stats = self._model["stats"]
        return (f"DistributedView({', '.join(self._model['lanes'])}: {stats['ops']} ops, "
                f"{stats['exchanges']} exchanges)")
