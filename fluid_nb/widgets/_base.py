"""What every fluid_nb widget shares: the small front-end module, the model trait, quiet
updates and the rich-display fallback.

The anywidget ESM (``fluid_nb/static/widget.js``, built from ``labextension/widget/``) is
small on purpose: it loads the heavy viewer (Graphviz in WebAssembly) once per page from the
Jupyter server (``<base>/fluid-nb/static/viewer.js``), so a saved notebook does not carry a
copy of it in every widget's state. ``_kind`` tells that module which view to draw.
"""
import json
from pathlib import Path

import anywidget
import traitlets

_STATIC = Path(__file__).resolve().parent.parent / "static"
WIDGET_ESM = _STATIC / "widget.js"

# Shown instead of the view when the front-end assets were never built (a source checkout
# without ``pip install -e .``); the Python side works the same either way.
_UNBUILT_ESM = """
export default { render({ el }) {
  el.textContent = "fluid_nb: the widget front end is not built; `pip install -e .` builds it.";
} };
"""


def _esm_source():
    return WIDGET_ESM if WIDGET_ESM.is_file() else _UNBUILT_ESM


def json_clean(value):
    """``value`` as plain JSON types (tuples become lists, numpy scalars numbers): the form
    the front end will hold, so comparisons against what was sent are exact."""
    return json.loads(json.dumps(value))


class ViewWidget(anywidget.AnyWidget):
    """Base of the fluid_nb widgets: one JSON view model in ``_model``, drawn by the view the
    front end picks by ``_kind``.

    Subclasses set ``_kind``, fill ``_model`` from a pure view-model function, and give
    :meth:`_fallback_bundle` (what frontends without widgets show).
    """

    _esm = _esm_source()
    _kind = traitlets.Unicode("").tag(sync=True)
    _model = traitlets.Dict().tag(sync=True)

    def _set_model_quietly(self, model):
        """Set ``_model`` here without sending it: the front end already built the same value
        from a delta message. Keeping the kernel's copy current matters when a page reloads
        and asks the kernel for the widget's state again.

        The value is written where traitlets keeps it, past the trait's notification: a
        notified change would have ipywidgets compare the old and the new model as JSON
        (under a property lock) and traitlets compare them as dicts, each a walk of the
        whole program's model on every live cell, costlier than building the model."""
        self._trait_values["_model"] = model

    # --- display ------------------------------------------------------------------------
    def _fallback_bundle(self):
        """Extra MIME data for frontends without widgets (or untrusted notebooks)."""
        return {}

    def _repr_mimebundle_(self, **kwargs):
        found = super()._repr_mimebundle_(**kwargs)
        if found is None:
            return None
        data, metadata = found if isinstance(found, tuple) else (found, {})
        fallback = self._fallback_bundle()
        # the widget view stays the preferred output; the rest is read only where it is not
        # available, so the plain text is the fallback's when it has one
        merged = dict(fallback)
        merged.update({k: v for k, v in data.items() if k != "text/plain"})
        merged.setdefault("text/plain", data.get("text/plain", repr(self)))
        return merged, metadata
