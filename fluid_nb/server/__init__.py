"""The Jupyter server extension: decodes Paddle program files for the JupyterLab viewer and
serves the front-end viewer bundle.

Routes (under the server's base URL, both need a logged-in user):

- ``GET fluid-nb/api/program?path=<path relative to the server root>``: the program model
  (``fluid_nb.viz.program_model``) of a ``.pdmodel`` / ``__model__`` file, decoded by
  fluid_nb's own codec. 400 with the typed error's message for a file that is not a program,
  403 for a path that leaves the server root, 404 for a missing file.
- ``GET fluid-nb/static/<file>``: the built front-end files (``viewer.js``: Graphviz in
  WebAssembly and the views), so widgets load the heavy code once per page from the installed
  package instead of carrying it in their saved state.

Enabled by ``jupyter-config/jupyter_server_config.d/fluid_nb.json`` (installed with the
package); ``fluid_nb._jupyter_server_extension_points`` names this module.
"""
from .handlers import ProgramModelHandler, ViewerAssetHandler, route_table


def _load_jupyter_server_extension(serverapp):
    """Add the routes to a running Jupyter server."""
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", route_table(web_app.settings["base_url"]))
    serverapp.log.info("fluid_nb server extension: program files and viewer assets enabled")


# the name older jupyter_server/notebook versions look for
load_jupyter_server_extension = _load_jupyter_server_extension

__all__ = ["ProgramModelHandler", "ViewerAssetHandler", "route_table"]
