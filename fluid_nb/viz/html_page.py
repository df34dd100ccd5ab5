"""A self-contained HTML page showing a program model as the interactive graph.

The page inlines the standalone viewer bundle (``fluid_nb/static/viewer.js``, Graphviz in
WebAssembly included) and the model JSON, so it opens from disk with no network. The
program's text listing is in the page too, readable without JavaScript.
"""
import base64
import gzip
import html
import json
import os
import re

from ..errors import NotFound
from .listing import model_listing

VIEWER_JS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "static", "viewer.js")

#: model JSON larger than this (characters) is stored gzip-compressed in base64: a 5,000-op
#: training program's 17 MB of JSON become 2 MB, which the browser reads and unpacks in a
#: fraction of the time it takes to parse the plain text in the page
COMPRESS_ABOVE = 1 << 20

_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body{{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;
background:#fff;color:#111}}
header{{padding:8px 16px;border-bottom:1px solid #ddd}}
header h1{{font-size:16px;margin:0}}
header p{{font-size:12px;margin:2px 0 0;color:#555}}
#fluid-nb-program{{height:calc(100vh - 60px);min-height:480px}}
#fluid-nb-program .fluid-nb-program-body,#fluid-nb-program .fluid-nb-program-graph,
#fluid-nb-program .fluid-nb-program-details{{max-height:calc(100vh - 150px)}}
.fluid-nb-fallback{{padding:8px 16px}}
.fluid-nb-fallback pre{{font-size:12px;overflow-x:auto}}
</style>
</head>
<body>
<header><h1>{title}</h1><p>{summary}</p></header>
<div id="fluid-nb-program"></div>
<details class="fluid-nb-fallback" id="fluid-nb-listing"{listing_open}>
<summary>Program listing (text)</summary>
<pre>{listing}</pre>
</details>
<noscript><p class="fluid-nb-fallback">The interactive graph needs JavaScript; the program
listing above shows the same program as text.</p></noscript>
<script type="{model_type}" id="fluid-nb-model"{model_encoding}>{model_json}</script>
<script>
// the model's text, read before the viewer's script: a large model is stored compressed,
// and the browser unpacks it natively while it compiles the viewer
window.fluidNbModelText = (function () {{
  var source = document.getElementById("fluid-nb-model");
  if (source.dataset.encoding !== "gzip+base64" || typeof DecompressionStream === "undefined") {{
    return Promise.resolve(source.textContent);
  }}
  return fetch("data:application/octet-stream;base64," + source.textContent.trim())
    .then(function (response) {{
      return new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).text();
    }});
}})();
performance.mark("fluid-nb-viewer-start");  // (the render benchmark reads the page's clock)
</script>
<script>{viewer_js}</script>
<script>
performance.mark("fluid-nb-viewer-end");
(function () {{
  var el = document.getElementById("fluid-nb-program");
  function failed(err) {{
    el.textContent = "The graph could not be drawn: " + err;
    document.getElementById("fluid-nb-listing").open = true;
  }}
  window.fluidNbModelText.then(function (text) {{
    var model = JSON.parse(text);
    performance.mark("fluid-nb-model-read");
    window.fluidNbViewer.renderProgram(el, model, model.view || {{}});
  }}).catch(failed);
}})();
</script>
</body>
</html>
"""


def viewer_js():
    """The text of the standalone viewer bundle; NotFound (saying how to build it) when the
    front-end assets were not built."""
    try:
        with open(VIEWER_JS, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise NotFound(f"html_page: the front-end viewer bundle expected at {VIEWER_JS}, but "
                       f"it is not there: the front-end assets are not built. Build them by "
                       f"installing the package from its source tree (`pip install -e .` runs "
                       f"the npm build; it needs Node.js), or write .dot instead") from None


def script_safe_json(value):
    """JSON text that is safe inside a ``<script>`` element: ``</`` is written ``<\\/`` and
    ``<!--`` as ``\\u003c!--`` (the same JSON), so no string in the model can end the element
    or switch the HTML parser into its comment-in-script state."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


def html_page(model, title=None, listing=None):
    """A self-contained HTML page with the interactive graph of program model ``model``.

    ``title`` defaults to the model's; ``listing`` (text shown without JavaScript) defaults to
    :func:`~fluid_nb.viz.listing.model_listing` of the model. Raises NotFound when the viewer
    bundle is not built. The page needs no network: everything is inline.
    """
    script = _SCRIPT_END.sub(r"<\\/\1", viewer_js())
    title = title if title is not None else model.get("title", "program")
    stats = model.get("stats", {})
    summary = (f"{stats.get('blocks', 0)} block(s), {stats.get('ops', 0)} ops, "
               f"{stats.get('vars', 0)} variables")
    text = listing if listing is not None else model_listing(model)
    model_json = script_safe_json(model)
    model_type, model_encoding = "application/json", ""
    if len(model_json) > COMPRESS_ABOVE:
        model_json = base64.b64encode(gzip.compress(model_json.encode("utf-8"), 6)).decode()
        model_type, model_encoding = "application/octet-stream", ' data-encoding="gzip+base64"'
    return _PAGE.format(title=html.escape(str(title)), summary=summary,
                        listing=html.escape(text), listing_open="",
                        model_type=model_type, model_encoding=model_encoding,
                        model_json=model_json, viewer_js=script)
