"""The ``fluid-nb`` command (:mod:`.commands`) and the demo it runs (:mod:`.demo`)."""
from .commands import load_model_for_run, main  # noqa: F401
