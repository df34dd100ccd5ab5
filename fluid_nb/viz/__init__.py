"""View models: pure functions from program (and runtime) state to plain JSON, DOT and HTML.

Nothing here changes the state it reads, and nothing needs a browser: the widgets and the
JupyterLab extension only draw these models.

- :func:`program_model` / :func:`program_mark`: a program as a graph model (MIME
  ``application/vnd.fluid-nb.program+json``); :func:`program_delta` / :func:`apply_delta`: what
  changed between two models; :func:`assemble_dot`: the model's DOT text.
- :func:`program_listing` / :func:`listing_html`: the readable text listing and its HTML form.
- :func:`html_page`: a self-contained HTML page with the interactive graph; :func:`show`:
  a program as a cell result opened at a chosen op (``reveal``), roles hidden.
- :func:`lod_model`: a LoD tensor as nested sequences; :func:`scope_model`: the scope tree;
  :func:`trace_while`: one run of a ``while`` op, iteration by iteration (with the
  DynamicRNN picture when the loop is one).
"""
from .delta import DELTA_FORMAT, apply_delta, program_delta
from .dot import assemble_dot
from .html_page import html_page
from .listing import listing_html, model_listing, program_listing
from .lod_model import lod_model
from .loop_trace import find_while, trace_while
from .program_model import (MIME_TYPE, ProgramMark, op_id, op_role_name, program_mark,
                            program_model)
from .scope_model import describe_value, scope_model
from .show import show

__all__ = ["program_model", "program_mark", "program_delta", "apply_delta", "assemble_dot",
           "program_listing", "model_listing", "listing_html", "html_page", "MIME_TYPE",
           "DELTA_FORMAT", "ProgramMark", "op_id", "op_role_name", "lod_model", "scope_model",
           "describe_value", "trace_while", "find_while", "show"]
