"""Hostile-input corpus, the native compiler: programs whose variable names hold every byte
value and every trick that could end a comment, a string literal or a line of the generated
C++ (compiled and run: they give the interpreter's values and no payload runs), op types and
attributes made to reach the source, damaged build-cache entries (cut short, zeroed, not a
library, a directory, a changed or missing hash), cache folders that cannot be one, wrong
arguments to ``native.generate``/``compile``/a compiled program's ``run``/the standalone
source, and outputs of ``fluid-nb compile`` that cannot be written. Every refusal is typed,
says what was expected, and leaves programs, scopes and files as they were.
"""
import os
import pathlib
import tempfile

import numpy as np

from fluid_nb import cli
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native.build import build, cached
from fluid_nb.rewriters.native.standalone import standalone_source
from tests.errors.corpus import Case, program_state, scope_state
from tests.errors.hostile import executed_marker, family_test
from tests.native.hostile_programs import (binary_agrees, binary_names, byte_names,
                                           compiled_agrees, lod_pool, mul_scale, trick_names,
                                           tricks)

FAMILY = "native"
REPO = pathlib.Path(__file__).resolve().parents[2]
MLP = REPO / "tests" / "fixtures" / "paddle" / "inference" / "mlp"
#: the byte values 1-255 in groups: each case compiles one program whose names hold a group
BYTE_GROUP = 64
#: the one binary a case builds and runs
BINARY = "hostile-model"


def _state(program, scope):
    return lambda: (program_state(program), scope_state(scope))


def _ops_state(program, scope):
    """The program's ops as they stand (for a program holding attribute values that its
    bytes cannot encode) and the scope."""
    def state():
        ops = tuple((op.type, repr(sorted(op.attrs.items(), key=lambda item: item[0])),
                     repr(op.inputs), repr(op.outputs))
                    for block in program.blocks for op in block.ops)
        return ops, scope_state(scope)
    return state


def _printable(text):
    """Assert ``text`` (generated source) is printable ASCII lines: no name got in raw."""
    assert all(0x20 <= ord(c) < 0x7F or c == "\n" for c in text), "a raw byte in the source"


# --- names ----------------------------------------------------------------------------------
def _byte_cases():
    cases = []
    for first in range(1, 256, BYTE_GROUP):
        last = min(first + BYTE_GROUP - 1, 255)
        cases.append(Case(FAMILY, f"name-bytes-{first:03d}-{last:03d}", must_fail=False,
                          act=lambda a=first, b=last: compiled_agrees(*mul_scale(
                              byte_names(a, b)))))
    return cases


def _generated_source(text):
    program, scope, feed, fetch = mul_scale(trick_names(text))
    _printable(native.generate(program, feed=feed, fetch=[fetch], scope=scope).source)


def _standalone_text(text):
    program, scope, feed, fetch = mul_scale(trick_names(text))
    _printable(standalone_source(program, feed, [fetch], scope)[0])


def _trick_cases(marker):
    cases = []
    for label, text in tricks(marker).items():
        cases += [
            Case(FAMILY, f"name-{label}-compiled", must_fail=False,
                 act=lambda t=text: compiled_agrees(*mul_scale(trick_names(t)))),
            Case(FAMILY, f"name-{label}-generated", must_fail=False,
                 act=lambda t=text: _generated_source(t)),
            # the binary writes each fetched variable to a file named after it: a name
            # longer than a file name is refused
            Case(FAMILY, f"name-{label}-standalone-source", must_fail=len(text) > 200,
                 act=lambda t=text: _standalone_text(t))]
    for label in ("newline-static-initializer", "quote", "state-member", "define"):
        cases.append(Case(FAMILY, f"name-{label}-lod-compiled", must_fail=False,
                          act=lambda t=tricks(marker)[label]: compiled_agrees(
                              *lod_pool(trick_names(t)))))
    return cases


def _fetch_file_cases():
    cases = []
    for label, fetch in (("nul", "z\0z"), ("too-long", "z" * 300),
                         ("slash-collides", "a/b")):
        program, scope, feed, _ = mul_scale({"z": fetch})
        extra = ["a_b"] if label == "slash-collides" else []
        if extra:
            block = program.global_block()
            block.create_var(name="a_b", shape=[4, 2], dtype="float32")
            block.append_op(type="scale", inputs={"X": ["a/b"]}, outputs={"Out": ["a_b"]},
                            attrs={"scale": 1.0})
        cases.append(Case(FAMILY, f"standalone-fetch-file-{label}", mentions=("fetch",),
                          act=lambda p=program, s=scope, f=feed, z=[fetch] + extra:
                          standalone_source(p, f, z, s), state=_state(program, scope)))
    return cases


# --- op types and attributes ------------------------------------------------------------------
def _op_type_cases(marker):
    cases = []
    for label in ("newline-static-initializer", "quote", "block-comment-end", "define",
                  "backslash-at-end", "runtime-function"):
        program, scope, feed, fetch = mul_scale({})
        program.global_block().ops[1].type = tricks(marker)[label]
        for how, act in (("generate", lambda p=program, s=scope, f=feed, z=fetch:
                          native.generate(p, feed=f, fetch=[z], scope=s)),
                         ("compile", lambda p=program, s=scope, f=feed, z=fetch:
                          native.compile(p, f, [z], scope=s))):
            # "mul" is a real op type: the program then computes mul(y) and is refused
            # for its slots, or runs; any other is an unknown op type
            cases.append(Case(FAMILY, f"op-type-{label}-{how}", act=act,
                              state=_state(program, scope),
                              must_fail=None if label == "runtime-function" else True))
    return cases


def _attribute_cases(marker):
    run = f'system("touch {marker}")'
    bad = {"scale-string": (1, "scale", f"1); {run}; (1"),
           "scale-list": (1, "scale", [1.0, 2.0]),
           "bias-string": (1, "bias", f"0.0f, {run}, 0"),
           "bias-after-scale-string": (1, "bias_after_scale", "true); " + run),
           "x-num-col-dims-string": (0, "x_num_col_dims", f"1, {run}, 1"),
           "x-num-col-dims-float": (0, "x_num_col_dims", 1.5)}
    cases = []
    for label, (index, name, value) in bad.items():
        program, scope, feed, fetch = mul_scale({})
        program.global_block().ops[index].attrs[name] = value
        cases.append(Case(FAMILY, f"attr-{label}", mentions=(name,),
                          act=lambda p=program, s=scope, f=feed, z=fetch:
                          native.compile(p, f, [z], scope=s),
                          state=_ops_state(program, scope)))
    for label, value in (("pooltype-code", f'SUM"); {run}; ("'), ("pooltype-number", 3)):
        program, scope, feed, fetch = lod_pool({})
        program.global_block().ops[0].attrs["pooltype"] = value
        cases.append(Case(FAMILY, f"attr-{label}", mentions=("pooltype",),
                          act=lambda p=program, s=scope, f=feed, z=fetch:
                          native.compile(p, f, [z], scope=s),
                          state=_ops_state(program, scope)))
    return cases


# --- the build cache --------------------------------------------------------------------------
def _library(scale):
    program, scope, feed, fetch = mul_scale({}, scale=scale)
    return build(native.generate(program, feed=feed, fetch=[fetch], scope=scope).source)[0]


def _unreadable(lib):
    lib.chmod(0)


CACHE_DAMAGE = {
    "truncated": lambda lib: lib.write_bytes(lib.read_bytes()[:len(lib.read_bytes()) // 3]),
    "cut-at-header": lambda lib: lib.write_bytes(lib.read_bytes()[:64]),
    "zero-filled": lambda lib: lib.write_bytes(bytes(len(lib.read_bytes()))),
    "not-elf": lambda lib: lib.write_text("#!/bin/sh\ntouch EXECUTED\n"),
    "empty": lambda lib: lib.write_bytes(b""),
    "directory": lambda lib: (lib.unlink(), lib.mkdir()),
    "hash-changed": lambda lib: lib.with_name(lib.name + ".sha256").write_text("0" * 64),
    "hash-missing": lambda lib: lib.with_name(lib.name + ".sha256").unlink(),
    "hash-a-directory": lambda lib: (lib.with_name(lib.name + ".sha256").unlink(),
                                     lib.with_name(lib.name + ".sha256").mkdir()),
    "bit-flipped": lambda lib: lib.write_bytes(bytes([lib.read_bytes()[0] ^ 1])
                                               + lib.read_bytes()[1:]),
    "unreadable": _unreadable,
}


def _rebuilt(scale):
    compiled_agrees(*mul_scale({}, scale=scale))
    assert cached(_library(scale))


def _cache_cases():
    cases = []
    for k, (label, damage) in enumerate(sorted(CACHE_DAMAGE.items())):
        scale = 10.0 + k  # a program of its own: its library never loaded in this process
        cases.append(Case(FAMILY, f"cache-{label}", must_fail=False,
                          setup=lambda s=scale, d=damage: d(_library(s)),
                          act=lambda s=scale: _rebuilt(s)))
    return cases


def _with_cache(root, act):
    def run():
        previous = os.environ.get("FLUID_NB_CACHE")
        os.environ["FLUID_NB_CACHE"] = str(root)
        try:
            return act()
        finally:
            os.environ.pop("FLUID_NB_CACHE")
            if previous is not None:
                os.environ["FLUID_NB_CACHE"] = previous
    return run


def _cache_folder_cases(workdir):
    if workdir.exists():
        (workdir / "cache-file").write_text("x")
    cases = []
    for k, (label, root) in enumerate((("a-file", workdir / "cache-file"),
                                       ("name-too-long", workdir / ("n" * 300)),
                                       ("under-a-file", workdir / "cache-file" / "below"))):
        program, scope, feed, fetch = mul_scale({}, scale=30.0 + k)
        cases.append(Case(FAMILY, f"cache-folder-{label}", mentions=("cache",),
                          state=_state(program, scope),
                          act=_with_cache(root, lambda p=program, s=scope, f=feed, z=fetch:
                                          native.compile(p, f, [z], scope=s))))
    return cases


# --- arguments --------------------------------------------------------------------------------
def _argument_cases():
    program, scope, feed, fetch = mul_scale({})
    calls = {
        "compile-feed-list": lambda: native.compile(program, [feed], [fetch], scope=scope),
        "compile-feed-string": lambda: native.compile(program, "x", [fetch], scope=scope),
        "compile-feed-int-key": lambda: native.compile(program, {1: 2}, [fetch], scope=scope),
        "compile-scope-string": lambda: native.compile(program, feed, [fetch], scope="x"),
        "compile-fetch-none": lambda: native.compile(program, feed, None, scope=scope),
        "compile-fetch-string": lambda: native.compile(program, feed, fetch, scope=scope),
        "compile-fetch-int": lambda: native.compile(program, feed, [3], scope=scope),
        "compile-fetch-dict": lambda: native.compile(program, feed, {fetch: 1}, scope=scope),
        "compile-program-string": lambda: native.compile("p", feed, [fetch], scope=scope),
        "compile-program-none": lambda: native.compile(None, feed, [fetch], scope=scope),
        "compile-march-native-string": lambda: native.compile(program, feed, [fetch],
                                                              scope=scope, march_native="1"),
        "compile-target-unknown": lambda: native.compile(program, feed, [fetch], scope=scope,
                                                         target="fortran"),
        "compile-target-int": lambda: native.compile(program, feed, [fetch], scope=scope,
                                                     target=3),
        "compile-fetch-unknown": lambda: native.compile(program, feed, ["nothing"],
                                                        scope=scope),
        "generate-feed-list": lambda: native.generate(program, feed=[feed], scope=scope),
        "generate-fetch-int": lambda: native.generate(program, feed=feed, fetch=3,
                                                      scope=scope),
        "generate-scope-list": lambda: native.generate(program, feed=feed, scope=[scope]),
        "generate-program-dict": lambda: native.generate({}, feed=feed),
        "standalone-fetch-none": lambda: standalone_source(program, feed, None, scope),
        "standalone-feed-tuple": lambda: standalone_source(program, (1,), [fetch], scope),
        "standalone-target-unknown": lambda: standalone_source(program, feed, [fetch], scope,
                                                               target="rocm"),
    }
    cases = [Case(FAMILY, f"argument-{label}", act=act, state=_state(program, scope))
             for label, act in calls.items()]
    # a compiled program checks its arguments before it builds anything
    compiled = native.NativeProgram(program, [fetch])
    for label, arguments in (("feed-string", dict(feed="x")), ("feed-list", dict(feed=[1])),
                             ("fetch-int", dict(fetch_list=3)),
                             ("fetch-none-item", dict(fetch_list=[None])),
                             ("scope-int", dict(scope=1))):
        cases.append(Case(FAMILY, f"argument-run-{label}", state=_state(program, scope),
                          act=lambda a=arguments: compiled.run(**{"feed": feed, "scope": scope,
                                                                 **a})))
    return cases


# --- fluid-nb compile's outputs ---------------------------------------------------------------
def _cli_compile(workdir, *options, cxx=None):
    def act():
        previous = os.environ.get("CXX")
        if cxx is not None:
            os.environ["CXX"] = str(cxx)
        try:
            return cli.main(["--debug", "compile", str(MLP / "separate"), "--feed",
                             f"x={workdir / 'inputs' / 'x.npy'}", *map(str, options)])
        finally:
            if cxx is not None:
                os.environ.pop("CXX")
                if previous is not None:
                    os.environ["CXX"] = previous
    return act


def _prepare_cli(workdir):
    """The input and the failing "compiler" the command cases use, and their output
    folder (made with the list of cases: a case's own files are compared)."""
    inputs = workdir / "inputs"
    inputs.mkdir(exist_ok=True)
    np.save(inputs / "x.npy", np.load(MLP / "input.npy"))
    noisy = inputs / "c++"  # fails with 200 lines of errors
    noisy.write_text("#!/bin/sh\nfor i in $(seq 200); do echo \"error line $i\" >&2; done\n"
                     "exit 1\n")
    noisy.chmod(0o755)
    (workdir / "outputs" / "a-directory").mkdir(parents=True, exist_ok=True)
    (workdir / "outputs" / "a-file").write_text("x")
    # the build cache's own folder, as after any earlier build
    (workdir / "cache" / "native").mkdir(parents=True, exist_ok=True)


def _cli_cases(workdir):
    if workdir.exists():
        _prepare_cli(workdir)
    out, missing, long = workdir / "outputs", workdir / "missing", "n" * 300
    command = {
        "output-a-directory": (("-o", out / "a-directory"), ("directory",)),
        "output-in-missing-folder": (("-o", missing / "m.cc"), ("folder",)),
        "output-under-a-file": (("-o", out / "a-file" / "m.cc"), ("folder",)),
        "output-name-too-long": (("-o", out / long), ("bytes",)),
        "binary-in-missing-folder": (("-o", out / "m.cc", "--binary", missing / "m"),
                                     ("folder",)),
        "binary-a-directory": (("-o", out / "m.cc", "--binary", out / "a-directory"),
                               ("directory",)),
        "binary-name-too-long": (("-o", out / "m.cc", "--binary", out / long), ("bytes",)),
        "target-unknown": (("-o", out / "m.cc", "--target", "rocm"), ("target",)),
    }
    cases = [Case(FAMILY, f"cli-{label}", act=_cli_compile(workdir, *options),
                  mentions=mentions) for label, (options, mentions) in command.items()]
    cases.append(Case(FAMILY, "cli-failing-compiler", mentions=("error line 1", ".log"),
                      act=_cli_compile(workdir, "-o", out / "m.cc", "--binary", out / "m",
                                       cxx=workdir / "inputs" / "c++")))
    return cases


def _cli_binary_case(marker):
    """A saved model with hostile names through the whole command: the binary predicts
    the interpreter's values and no payload runs."""
    return [Case(FAMILY, "cli-compile-binary-hostile-names", must_fail=False,
                 act=lambda: binary_agrees(tempfile.mkdtemp(), binary_names(marker),
                                           binary_name=BINARY))]


def cases(workdir):
    workdir = pathlib.Path(workdir)
    marker = executed_marker(workdir)
    return (_byte_cases() + _trick_cases(marker) + _fetch_file_cases()
            + _op_type_cases(marker) + _attribute_cases(marker) + _cache_cases()
            + _cache_folder_cases(workdir) + _argument_cases() + _cli_cases(workdir)
            + _cli_binary_case(marker))


#: the compiler a native build starts, as build.compiler names it: $CXX, else c++
COMPILER = os.path.basename(os.environ.get("CXX") or "c++")

test_corpus = family_test(cases, seconds=20, allowed_programs=(COMPILER, BINARY))
