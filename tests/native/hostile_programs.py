"""Small programs whose names try to become code in the generated C++, for the native
compiler's tests and the hostile-input corpus.

Each payload, if it ever ran, would create the file ``marker`` (an absolute path): a test
that compiles and runs the program then finds no such file, and the values the
interpreter gives.
"""
import pathlib

import numpy as np

import fluid_nb as fluid


def tricks(marker):
    """{label: text} of names that would break out of a comment, a string literal or a
    line of the generated source, or take the place of a name the code uses itself."""
    run = f'system("touch {marker}")'
    return {
        # a static initializer on a line of its own, named after its line so that the name
        # may appear any number of times, then a comment to swallow the rest of the line
        "newline-static-initializer": "a\n#define PWN2(n) pwn##n\n#define PWN(n) PWN2(n)\n"
                                      f"static int PWN(__LINE__) = {run};\n//",
        "carriage-return": f"a\rstatic int pwn = {run};\r",
        "block-comment-end": f"a*/ static int pwn = {run}; /*",
        "line-comment-newline": f"a//\nstatic int pwn = {run};//",
        "quote": f'a"); static int pwn = {run}; //("',
        "backslash-at-end": "a\\",
        "trigraph-backslash": f"a??/\nstatic int pwn = {run};",
        "define": f"\n#define float int\n#define copy(a, b, n) {run}\n",
        "include": '\n#include "/etc/passwd"\n',
        "line-separator": f"a\u2028static int pwn = {run};\u2029",
        "digraph-define": f"\n%:define mul(...) {run}\n",
        "raw-string": f'R"(a)" {run}',
        "runtime-function": "mul",
        "pointer-array": "v",
        "macro": "errno",
        "reserved-identifier": "__LINE__",
        "keyword": "float",
        "scratch-buffer": "scratch@1",
        "state-member": "at",
        "long": "n" * 100_000,
        "lone-surrogate": "a\ud800b",
    }


def byte_names(first, last):
    """Three names (feed, parameter, temporary) made of the byte values first..last: each
    byte alone, then all of them, so a name may hold every one."""
    chars = "".join(map(chr, range(first, last + 1)))
    return {"x": "x" + chars, "w": chars + "w", "y": chars * 3}


def mul_scale(names, scale=2.0):
    """``z = scale * (x @ w) + y0``-like: x [4, 3] fed, w [3, 2] a parameter, y = x @ w
    and z = scale * y temporaries; names maps x, w, y, z (missing ones keep those names).
    Returns (program, scope, feed, fetch name)."""
    n = {"x": "x", "w": "w", "y": "y", "z": "z", **names}
    if len(set(n.values())) < 4:
        n["z"] = n["z"] + "\x01z"
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name=n["x"], shape=[4, 3], dtype="float32")
    block.create_var(name=n["w"], shape=[3, 2], dtype="float32", persistable=True)
    block.create_var(name=n["y"], shape=[4, 2], dtype="float32")
    block.create_var(name=n["z"], shape=[4, 2], dtype="float32")
    block.append_op(type="mul", inputs={"X": [n["x"]], "Y": [n["w"]]},
                    outputs={"Out": [n["y"]]})
    block.append_op(type="scale", inputs={"X": [n["y"]]}, outputs={"Out": [n["z"]]},
                    attrs={"scale": float(scale)})
    scope = fluid.Scope()
    scope.var(n["w"]).get_tensor().set(np.arange(6, dtype="float32").reshape(3, 2) - 2.5)
    feed = {n["x"]: np.random.RandomState(1).rand(4, 3).astype("float32")}
    return program, scope, feed, n["z"]


def interpreted(program, scope, feed, fetch):
    """The interpreter's values of ``fetch`` (the reference the compiled code must give)."""
    return fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=[fetch],
                                                scope=scope)[0]


def compiled_agrees(program, scope, feed, fetch):
    """Compile ``program``, run it, and assert it gives the interpreter's values."""
    from fluid_nb.rewriters import native
    want = interpreted(program, scope, feed, fetch)
    got, = native.compile(program, feed, [fetch], scope=scope).run(feed, scope=scope)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    return got


def trick_names(text):
    """The trick ``text`` as the name of each of the four variables (made distinct)."""
    return {"x": text, "w": text + "_w", "y": "y_" + text, "z": text + "z"}


def lod_pool(names, pooltype="SUM"):
    """A program whose sizes are read at run time (a LoD feed): z = 2 * sequence_pool(x).
    Returns (program, scope, feed, fetch name)."""
    n = {"x": "x", "y": "y", "z": "z", **names}
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name=n["x"], shape=[-1, 3], dtype="float32", lod_level=1)
    block.create_var(name=n["y"], shape=[-1, 3], dtype="float32")
    block.create_var(name=n["z"], shape=[-1, 3], dtype="float32")
    block.append_op(type="sequence_pool", inputs={"X": [n["x"]]}, outputs={"Out": [n["y"]]},
                    attrs={"pooltype": pooltype})
    block.append_op(type="scale", inputs={"X": [n["y"]]}, outputs={"Out": [n["z"]]},
                    attrs={"scale": 2.0})
    values = np.random.RandomState(2).rand(5, 3).astype("float32")
    return program, fluid.Scope(), {n["x"]: (values, [[0, 2, 5]])}, n["z"]


def binary_names(marker):
    """Names for a saved model built into a binary: every trick short enough and every
    byte value (the feed's without '=', which ``--feed NAME=PATH`` splits at; the fetch's
    with a '/', which its file name turns into '_')."""
    hostile = "".join(text for text in tricks(marker).values() if len(text) < 1000
                      ).replace("\ud800", "") + "".join(map(chr, range(1, 256)))
    return {"x": "x" + hostile.replace("=", ""), "w": hostile + "w", "y": "y" + hostile,
            # save_inference_model fetches a target through a scale of this prefix, or
            # the target itself when it already has it
            "z": "save_infer_model/scale_" + hostile.replace("/", "")[:200]}


def saved_model(folder, names):
    """``mul_scale(names)`` saved as ``folder/m.pdmodel`` and ``folder/m.pdiparams``, with
    its input as ``folder/x.npy``: (model file, params file, input file, fetch name, the
    interpreter's values)."""
    folder = pathlib.Path(folder)
    program, scope, feed, fetch = mul_scale(names)
    want = interpreted(program, scope, feed, fetch)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(folder), list(feed),
                                      [program.global_block().var(fetch)],
                                      fluid.Executor(fluid.CPUPlace()), main_program=program,
                                      model_filename="m.pdmodel",
                                      params_filename="m.pdiparams")
    np.save(folder / "x.npy", next(iter(feed.values())))
    return folder / "m.pdmodel", folder / "m.pdiparams", folder / "x.npy", fetch, want


def binary_agrees(folder, names, binary_name="model.bin"):
    """Save ``mul_scale(names)`` in ``folder``, build it with ``fluid-nb compile
    --binary``, run the binary and assert it writes the interpreter's values to its
    fetch's file; the binary's path."""
    import subprocess
    from fluid_nb.cli import main as cli
    folder = pathlib.Path(folder)
    model, params, x, fetch, want = saved_model(folder, names)
    source, binary = folder / "model.cc", folder / binary_name
    assert cli(["--debug", "compile", str(model), "--feed", f"{names['x']}={x}",
                "-o", str(source), "--binary", str(binary)]) == 0
    out = folder / "out"
    out.mkdir()
    done = subprocess.run([str(binary), str(params), str(x), str(out)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    written, = out.iterdir()
    assert written.name == fetch.replace("/", "_") + ".npy"
    np.testing.assert_allclose(np.load(written), want, rtol=1e-6)
    assert all(0x20 <= b < 0x7F or b in b"\n" for b in source.read_bytes())
    return binary
