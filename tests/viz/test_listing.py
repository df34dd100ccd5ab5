"""Readable listings (text, HTML fallback) and the self-contained HTML page."""
import importlib
import json
import re

import pytest

import fluid_nb as fluid
import fluid_nb.ops.control_flow  # noqa: F401  (control-flow ops registered)
from fluid_nb import viz
from fluid_nb.errors import NotFound

L = fluid.layers
# the module (the package attribute of the same name is the function)
html_page_module = importlib.import_module("fluid_nb.viz.html_page")

SMALL_LISTING = """\
{ // block_idx:0  parent_idx:-1  forward_idx:-1
    var x : LOD_TENSOR.shape(-1, 2).dtype(float32).lod_level(0)
    param persist var w : LOD_TENSOR.shape(2, 3).dtype(float32).lod_level(0)
    var y : LOD_TENSOR.shape(-1, 3).dtype(float32).lod_level(0)
    var z : LOD_TENSOR.shape(-1, 3).dtype(float32).lod_level(0)

    {Out=[y]} = mul(inputs={X=[x], Y=[w]}, x_num_col_dims=1, y_num_col_dims=1)
    {Out=[z]} = scale(inputs={X=[y]}, bias=0.0, bias_after_scale=True, scale=2.0)
}"""


def _small_program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        block = main.global_block()
        x = L.data(name="x", shape=[2], dtype="float32")
        w = block.create_parameter(name="w", shape=[2, 3], dtype="float32")
        y = block.create_var(name="y", shape=[-1, 3], dtype="float32")
        block.append_op(type="mul", inputs={"X": x, "Y": w}, outputs={"Out": y})
        L.scale(y, scale=2.0, name="z")
    return main


def _while_program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        limit = L.fill_constant(shape=[1], dtype="int64", value=3)
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        cond = L.less_than(i, limit)
        loop = L.While(cond=cond)
        with loop.block():
            L.increment(x=i, value=1, in_place=True)
            L.less_than(i, limit, cond=cond)
    return main


def test_small_program_listing_is_pinned():
    assert viz.program_listing(_small_program()) == SMALL_LISTING


def test_model_listing_matches_the_program_listing_up_to_variable_order():
    program = _small_program()
    text = viz.model_listing(viz.program_model(program))
    assert sorted(text.splitlines()) == sorted(SMALL_LISTING.splitlines())


def test_sub_block_is_listed_indented_under_its_while_op():
    lines = viz.program_listing(_while_program()).splitlines()
    at = next(i for i, line in enumerate(lines) if "= while(" in line)
    assert "sub_block=block[1]" in lines[at]
    assert lines[at + 1].startswith("        { // block_idx:1  parent_idx:0")
    assert any(line.startswith("            {Out=[") and "increment(" in line
               for line in lines[at + 1:])
    assert lines[-2] == "        }" and lines[-1] == "}"


def test_listing_html_escapes_names_and_has_a_variable_table():
    main = fluid.Program()
    main.global_block().create_var(name="<b>&x", shape=[1], dtype="float32")
    page = viz.listing_html(main)
    assert "<b>&x" not in page and "&lt;b&gt;&amp;x" in page
    assert "<table>" in page and "<th>variable</th>" in page


def test_listing_html_lists_ops_and_vars_of_a_real_program():
    page = viz.listing_html(_small_program())
    assert "mul(inputs={X=[x], Y=[w]}" in page and "<td><code>w</code></td>" in page


def test_listing_html_tables_never_split_a_word():
    """A narrow column is as wide as its longest word: no rule lets a cell break inside a
    word, and a variable's name does not wrap at all."""
    page = viz.listing_html(_small_program())
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "anywhere" not in style and "break-all" not in style and "break-word" not in style
    assert ".fluid-nb-listing td>code{white-space:nowrap}" in style


@pytest.fixture
def viewer_bundle(tmp_path, monkeypatch):
    path = tmp_path / "viewer.js"
    path.write_text("window.fluidNbViewer={renderProgram:function(){}};/* '</script>' */")
    monkeypatch.setattr(html_page_module, "VIEWER_JS", str(path))
    return path


def test_html_page_inlines_the_viewer_the_model_and_the_listing(viewer_bundle):
    program = _small_program()
    program.global_block().create_var(name="</script><script>alert(1)//", shape=[1],
                                      dtype="float32")
    model = viz.program_model(program, title="small")
    page = viz.html_page(model, "small <program>")
    assert "<title>small &lt;program&gt;</title>" in page
    assert "window.fluidNbViewer={renderProgram" in page
    # nothing inside a script element can close it early
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 4 and page.count("</script>") == 4
    embedded = json.loads(scripts[0])
    assert embedded == json.loads(json.dumps(model))
    assert "{Out=[z]} = scale(inputs={X=[y]}" in page  # readable without JavaScript
    assert "<noscript>" in page


def test_a_large_model_is_stored_compressed_and_unpacks_to_the_same_json(viewer_bundle,
                                                                          monkeypatch):
    import base64
    import gzip
    monkeypatch.setattr(html_page_module, "COMPRESS_ABOVE", 100)
    model = viz.program_model(_small_program(), title="small")
    page = viz.html_page(model, "small")
    stored = re.search(r'<script type="application/octet-stream" id="fluid-nb-model" '
                       r'data-encoding="gzip\+base64">(.*?)</script>', page, flags=re.S)
    assert stored is not None
    assert json.loads(gzip.decompress(base64.b64decode(stored.group(1)))) == \
        json.loads(json.dumps(model))
    assert "DecompressionStream" in page  # the page unpacks it itself


def test_html_page_without_built_assets_says_how_to_build_them(tmp_path, monkeypatch):
    monkeypatch.setattr(html_page_module, "VIEWER_JS", str(tmp_path / "missing.js"))
    with pytest.raises(NotFound, match=r"not built.*pip install -e \."):
        viz.html_page(viz.program_model(_small_program()), "t")


def test_a_slot_that_holds_nothing_is_left_out_of_listings_and_summaries():
    """A gradient nobody needs: an empty slot here, ``@EMPTY@`` in Paddle's files. Neither
    prints as ``X@GRAD=`` (or ``X@GRAD=[@EMPTY@]``); a place holder among real names keeps
    its position."""
    from fluid_nb.notebook.display import op_text
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        fluid.backward.append_backward(fluid.layers.mean(fluid.layers.fc(x, size=2)))
    mul_grad = next(op for op in main.global_block().ops if op.type == "mul_grad")
    assert mul_grad.outputs["X@GRAD"] == ()  # x takes no gradient
    for names in ((), ("@EMPTY@",)):
        mul_grad.outputs["X@GRAD"] = names
        shown = [op_text(mul_grad), viz.program_listing(main), viz.listing_html(main),
                 viz.model_listing(viz.program_model(main))]
        for text in shown:
            line = next(line for line in text.splitlines() if "mul_grad(" in line)
            assert "X@GRAD" not in line and "@EMPTY@" not in line, line
            assert "Y@GRAD" in line
    mul_grad.outputs["X@GRAD"] = ["@EMPTY@", "x@GRAD"]
    assert "X@GRAD=[@EMPTY@, x@GRAD]" in viz.program_listing(main)
