"""The Jupyter server extension: decodes Paddle program and parameter files for the
JupyterLab viewers and serves the front-end viewer bundle.

Routes (under the server's base URL, both need a logged-in user):

- ``GET fluid-nb/api/program?path=<path relative to the server root>``: the program model
  (``fluid_nb.viz.program_model``) of a ``.pdmodel`` / ``__model__`` file, decoded by
  fluid_nb's own codec. 400 with the typed error's message for a file that is not a program,
  403 for a path that leaves the server root, 404 for a missing file.
- ``GET fluid-nb/api/params?path=<path>``: the table of tensors
  (``fluid_nb.viz.params_table.params_model``: name, dtype, shape, statistics, histogram)
  of a ``.pdiparams`` / ``__params__`` file; the same refusals as the program route.
- ``GET fluid-nb/static/<file>``: the built front-end files (``viewer.js``: Graphviz in
  WebAssembly and the views), so widgets load the heavy code once per page from the installed
  package instead of carrying it in their saved state.

Enabled by ``jupyter-config/jupyter_server_config.d/fluid_nb.json`` (installed with the
package); ``fluid_nb._jupyter_server_extension_points`` names this module.
"""
from .handlers import ParamsModelHandler, ProgramModelHandler, ViewerAssetHandler, route_table


def _load_jupyter_server_extension(serverapp):
    """Add the routes to a running Jupyter server."""
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", route_table(web_app.settings["base_url"]))
    serverapp.log.info("fluid_nb server extension: program and parameter files and viewer "
                       "assets enabled")


# the name older jupyter_server/notebook versions look for
load_jupyter_server_extension = _load_jupyter_server_extension

__all__ = ["ParamsModelHandler", "ProgramModelHandler", "ViewerAssetHandler", "route_table"]
