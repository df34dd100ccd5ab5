"""Render timings of the program graph in Chromium (standalone viewer, no JupyterLab).

Run ``python benchmarks/program_view_render.py [ops]``:

1. First sight, as a user opens a program: ``fluid-nb render -o x.html`` of the study
   programs (a ResNet-56 with Momentum, a 12-layer Transformer encoder with Adam, a
   DynamicRNN classifier with Adam) and of Transformers of about 1,000 and 5,000 ops,
   opened in headless Chromium at 1280x800; the page's own clock from the navigation's start
   to the first drawing (its `data-first-paint-ms`), of which Graphviz's layout, the labels
   in view and their median height, and the page's size.
2. A live delta: a program of about ``ops`` ops (default 1000) rendered with
   ``fluid_nb/static/viewer.js``, then 10 ops appended and the delta applied (model and
   delta sizes, full render and delta render times).

Needs Playwright and /usr/bin/chromium.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.browser.study_models import STUDY_PROGRAMS, transformer_training  # noqa: E402

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


FIRST_SIGHT = """() => {
  const el = document.querySelector('.fluid-nb-program');
  const graph = el.querySelector('.fluid-nb-program-graph');
  const view = graph.getBoundingClientRect();
  const labels = [...graph.querySelectorAll('svg text')].map(t => t.getBoundingClientRect())
    .filter(r => r.height > 0 && r.bottom > view.top && r.top < view.bottom &&
                 r.right > view.left && r.left < view.right);
  const heights = labels.map(r => r.height).sort((a, b) => a - b);
  return {firstPaintMs: +el.dataset.firstPaintMs, layoutMs: +el.dataset.firstLayoutMs,
          renderMs: +el.dataset.firstRenderMs, labels: labels.length,
          medianPx: heights[Math.floor(heights.length / 2)], zoom: +el.dataset.zoom};
}"""


def first_sight(programs, browser="/usr/bin/chromium", repeat=3):
    """{name: figures} of opening each program's rendered page (best of ``repeat``)."""
    import subprocess
    from playwright.sync_api import sync_playwright
    found = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        for name, program in programs.items():
            model = Path(tmp) / f"{name}.pdmodel"
            model.write_bytes(program.desc.serialize_to_string())
            page_path = Path(tmp) / f"{name}.html"
            subprocess.run([sys.executable, "-m", "fluid_nb.cli", "render", str(model), "-o",
                            str(page_path)], check=True, capture_output=True)
            runs = []
            for _ in range(repeat):
                page = chromium.new_page(viewport={"width": 1280, "height": 800})
                page.goto(page_path.as_uri())
                page.wait_for_selector(".fluid-nb-program[data-first-paint-ms]", timeout=60000)
                runs.append(page.evaluate(FIRST_SIGHT))
                page.close()
            best = min(runs, key=lambda r: r["firstPaintMs"])
            best.update(ops=sum(len(block.ops) for block in program.blocks),
                        page_mb=page_path.stat().st_size / 1e6)
            found[name] = best
        chromium.close()
    return found


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
    programs = {name: build() for name, build in STUDY_PROGRAMS.items()}
    programs["transformer_1000_ops"] = transformer_training(n_layer=14)
    programs["transformer_5000_ops"] = transformer_training(n_layer=72)
    print("first sight at 1280x800 (page clock, best of 3):")
    for name, f in first_sight(programs).items():
        print(f"  {name:>22}: {f['ops']:5d} ops, page {f['page_mb']:.1f} MB, first drawing "
              f"{f['firstPaintMs']:.0f} ms (render {f['renderMs']:.0f}, layout "
              f"{f['layoutMs']:.0f}), {f['labels']} labels in view, median "
              f"{f['medianPx']:.1f} px, zoom {f['zoom']:.2f}")
    print("live delta:")
    found = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
    for key, value in found.items():
        print(f"{key:>24}: {value:.1f}" if isinstance(value, float) else f"{key:>24}: {value}")
    print(f"{'delta/model size':>24}: {found['delta_bytes'] / found['model_bytes']:.2%}")
