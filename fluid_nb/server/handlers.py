"""Request handlers of the fluid_nb server extension (see the package docstring)."""
import json
import os
from pathlib import Path

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ..errors import FluidError
from .paths import PathOutsideRoot, resolve_in_root

#: the built front-end files (viewer.js, widget.js)
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def program_model_of_file(path):
    """The program model of the ProgramDesc file at ``path``, or of the ONNX model at a
    ``*.onnx`` path (a typed error if the bytes are neither). Runs off the server's event
    loop."""
    from ..framework.program import Program
    from ..viz import program_model
    if Path(path).suffix == ".onnx":
        from ..rewriters.onnx import to_program
        return program_model(to_program(str(path)), title=Path(path).name)
    data = Path(path).read_bytes()
    return program_model(Program.parse_from_string(data), title=Path(path).name)


def params_model_of_file(path):
    """The parameters table (:func:`fluid_nb.viz.params_table.params_model`) of the
    parameter file at ``path``; bytes that are not tensor records are a typed error naming
    the file, never a decoder's traceback. Runs off the server's event loop."""
    from ..errors import InvalidArgument
    from ..viz.params_table import params_model
    try:
        return params_model(path, title=Path(path).name)
    except FluidError:
        raise
    except Exception as exc:  # noqa: BLE001  (a foreign file: say so in one line)
        raise InvalidArgument(f"{Path(path).name}: Paddle parameter tensors expected, but "
                              f"decoding failed: {type(exc).__name__}: {exc}") from exc


class ProgramModelHandler(APIHandler):
    """``GET fluid-nb/api/program?path=...``: a program file's model as JSON."""

    auth_resource = "contents"  # reading a file under the root, like the contents API
    #: the file's model, from its absolute path (a typed error when it cannot be read)
    model_of_file = staticmethod(program_model_of_file)
    api_name = "program"

    @staticmethod
    def accepts_folder(path):
        """Whether a folder (not a file) at ``path`` is read too."""
        return False

    @web.authenticated
    @authorized
    async def get(self):
        relative = self.get_query_argument("path", "")
        root = self.settings.get("server_root_dir") or self.contents_manager.root_dir
        try:
            path = resolve_in_root(root, relative)
        except PathOutsideRoot as err:
            return self._refuse(403, str(err))
        except FluidError as err:
            return self._refuse(400, str(err))
        hidden = not self.contents_manager.allow_hidden and _is_hidden(path, Path(root))
        if not path.exists() or hidden:
            return self._refuse(404, f"fluid-nb: no file {relative!r} under the server root")
        if not (path.is_file() or self.accepts_folder(path)):
            return self._refuse(400, f"fluid-nb: {relative!r} is not a file")
        try:
            model = await IOLoop.current().run_in_executor(None, self.model_of_file, path)
        except FluidError as err:
            return self._refuse(400, f"{relative}: {err}")
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(model))

    def _refuse(self, status, message):
        """Reply ``{"message": ...}`` with ``status``, as the server's own APIs do (the message
        is the typed error's text, sent as is)."""
        self.log.info("fluid-nb %s API: %d %s", self.api_name, status, message)
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": None}))


class ParamsModelHandler(ProgramModelHandler):
    """``GET fluid-nb/api/params?path=...``: a parameter file's (or a folder of them) table of
    tensors as JSON."""

    model_of_file = staticmethod(params_model_of_file)
    api_name = "params"

    @staticmethod
    def accepts_folder(path):
        """A folder of per-variable parameter files (Fluid's ``save_params``) is one table."""
        from ..viz.params_table import is_params_path
        return path.is_dir() and is_params_path(str(path))


def _is_hidden(path, root):
    """True when a part of ``path`` below ``root`` starts with a dot."""
    parts = path.relative_to(root.resolve()).parts
    return any(part.startswith(".") for part in parts)


class ViewerAssetHandler(JupyterHandler, web.StaticFileHandler):
    """``GET fluid-nb/static/<file>``: the built front-end bundles, for logged-in users."""

    @web.authenticated
    def get(self, path, include_body=True):
        return super().get(path, include_body)

    @web.authenticated
    def head(self, path):
        return super().head(path)

    def set_extra_headers(self, path):
        # the file changes only when the package is reinstalled; revalidate, never trust a
        # cached copy blindly
        self.set_header("Cache-Control", "no-cache")


def route_table(base_url):
    """The extension's tornado routes under ``base_url``."""
    return [
        (url_path_join(base_url, "fluid-nb/api/program"), ProgramModelHandler),
        (url_path_join(base_url, "fluid-nb/api/params"), ParamsModelHandler),
        (url_path_join(base_url, "fluid-nb/static/(.*)"), ViewerAssetHandler,
         {"path": os.fspath(STATIC_DIR)}),
    ]
