"""View models: pure functions from program (and runtime) state to plain JSON, DOT and HTML.

Nothing here changes the state it reads, and nothing needs a browser: the widgets and the
JupyterLab extension only draw these models.

- :func:`program_model` / :func:`program_mark`: a program as a graph model (MIME
  ``application/vnd.fluid-nb.program+json``); :func:`program_delta` / :func:`apply_delta`: what
  changed between two models; :func:`assemble_dot`: the model's DOT text.
- :func:`program_listing` / :func:`listing_html`: the readable text listing and its HTML form.
- :func:`html_page`: a self-contained HTML page with the interactive graph.
"""
from .delta import DELTA_FORMAT, apply_delta, program_delta
from .dot import assemble_dot
from .html_page import html_page
from .listing import listing_html, model_listing, program_listing
from .program_model import (MIME_TYPE, ProgramMark, op_id, op_role_name, program_mark,
                            program_model)

__all__ = ["program_model", "program_mark", "program_delta", "apply_delta", "assemble_dot",
           "program_listing", "model_listing", "listing_html", "html_page", "MIME_TYPE",
           "DELTA_FORMAT", "ProgramMark", "op_id", "op_role_name"]
