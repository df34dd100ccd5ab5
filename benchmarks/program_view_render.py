"""Render timings of the program graph in Chromium (standalone viewer, no JupyterLab).

Run ``python benchmarks/program_view_render.py [ops]``: builds a program of about ``ops`` ops
(default 1000), renders its model with ``fluid_nb/static/viewer.js`` in headless Chromium,
then appends 10 ops, applies the delta, and prints the figures (model and delta sizes, full
render and delta render times, segments laid out). Needs Playwright and /usr/bin/chromium.
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# the test programs (a deep MLP with backward and SGD ops) live with the front-end tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "frontend"))

from programs import deep_mlp  # noqa: E402

from fluid_nb.viz import program_delta, program_model  # noqa: E402
from fluid_nb.viz.html_page import viewer_js  # noqa: E402

OPS_PER_LAYER = 8.1

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<div id="host"></div><script>{viewer}</script></body></html>"""

MEASURE = """async ([model, delta]) => {
  const host = document.getElementById('host');
  const t0 = performance.now();
  const handle = window.fluidNbViewer.renderProgram(host, model, {});
  const first = await handle.ready;
  const full = performance.now() - t0;
  const t1 = performance.now();
  const second = await window.fluidNbViewer.applyDelta(handle, delta);
  const deltaMs = performance.now() - t1;
  return {full, first, deltaMs, second, nodes: host.querySelectorAll('g.node').length};
}"""


def measure(ops=1000, browser="/usr/bin/chromium"):
    """Figures of one full render and one 10-op delta render, as a dict."""
    from playwright.sync_api import sync_playwright
    program, add_ops = deep_mlp(max(1, round(ops / OPS_PER_LAYER)), grow=10)
    old = program_model(program)
    add_ops()
    new = program_model(program, mark=None)
    delta = program_delta(old, new)
    figures = {"ops": len(old["ops"]), "ops_after": len(new["ops"]),
               "model_bytes": len(json.dumps(old)), "delta_bytes": len(json.dumps(delta))}
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "measure.html"
        page_path.write_text(PAGE.format(viewer=viewer_js().replace("</script", "<\\/script")))
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                str(Path(tmp) / "profile"), executable_path=browser, headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
            page = ctx.new_page()
            page.goto(page_path.as_uri())
            start = time.perf_counter()
            result = page.evaluate(MEASURE, [old, delta])
            figures["wall_s"] = time.perf_counter() - start
            ctx.close()
    figures.update(render_ms=result["full"], delta_render_ms=result["deltaMs"],
                   segments=result["first"]["segments"],
                   delta_segments_laid_out=result["second"]["laidOut"],
                   layout_ms=result["first"]["layoutMs"], nodes=result["nodes"])
    return figures


if __name__ == "__main__":
    found = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
    for key, value in found.items():
        print(f"{key:>24}: {value:.1f}" if isinstance(value, float) else f"{key:>24}: {value}")
    print(f"{'delta/model size':>24}: {found['delta_bytes'] / found['model_bytes']:.2%}")
