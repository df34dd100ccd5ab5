"""The build cache loads only what it built: a cached library that is cut short, zeroed,
another file or a directory is built again (loading it would crash the process), a cache
folder that cannot be one is a typed error, and two processes compiling the same program at
once both get an intact library. Wrong arguments to the native compiler are refused at the
call; ``fluid-nb compile`` leaves nothing behind when it fails."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native
from fluid_nb.cli import main as cli
from fluid_nb.errors import InvalidArgument, InvalidType, NotFound, PreconditionNotMet
from fluid_nb.rewriters.native.build import build, cached

from .hostile_programs import compiled_agrees, mul_scale

REPO = pathlib.Path(__file__).resolve().parents[2]
MLP = REPO / "tests" / "fixtures" / "paddle" / "inference" / "mlp"


def _source(scale):
    program, scope, feed, fetch = mul_scale({}, scale=scale)
    return native.generate(program, feed=feed, fetch=[fetch], scope=scope).source


CORRUPTIONS = {
    "truncated": lambda lib: lib.write_bytes(lib.read_bytes()[:len(lib.read_bytes()) // 3]),
    "zero-filled": lambda lib: lib.write_bytes(bytes(len(lib.read_bytes()))),
    "not-elf": lambda lib: lib.write_text("not a shared library\n"),
    "empty": lambda lib: lib.write_bytes(b""),
    "directory": lambda lib: (lib.unlink(), lib.mkdir(), (lib / "x").write_text("x")),
    "hash-changed": lambda lib: lib.with_name(lib.name + ".sha256").write_text("0" * 64),
    "hash-missing": lambda lib: lib.with_name(lib.name + ".sha256").unlink(),
    "symlink": lambda lib: (lib.unlink(), lib.symlink_to("/bin/sh")),
}


@pytest.mark.parametrize("entry", ["program", "runtime"])
@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_a_damaged_cache_entry_is_built_again_not_loaded(damage, entry, tmp_path,
                                                         monkeypatch):
    """The program's library, or the runtime library it links (beside it in the cache)."""
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    scale = 1.0 + sorted(CORRUPTIONS).index(damage) / 8
    library, was_cached = build(_source(scale))  # built, never loaded in this process
    runtime, = library.parent.glob("fluid_runtime_*.so")
    assert not was_cached and cached(library) and cached(runtime)
    damaged = library if entry == "program" else runtime
    CORRUPTIONS[damage](damaged)
    assert not cached(damaged)
    compiled_agrees(*mul_scale({}, scale=scale))
    for intact in (library, runtime):
        assert cached(intact) and intact.is_file() and not intact.is_symlink()
    assert sorted(p.name for p in library.parent.iterdir()) == sorted(
        [library.name, library.name + ".sha256", runtime.name, runtime.name + ".sha256"])


def test_a_damaged_entry_does_not_crash_the_next_process(tmp_path):
    """The reported crash: a truncated library loaded by a fresh process (SIGBUS)."""
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(REPO)!r})
        from tests.native.hostile_programs import compiled_agrees, mul_scale
        compiled_agrees(*mul_scale({{}}, scale=3.5))
    """)
    env = dict(os.environ, FLUID_NB_CACHE=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    for library in (tmp_path / "native").glob("*.so"):  # the program's and the runtime's
        library.write_bytes(library.read_bytes()[:4096])
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert second.returncode == 0, second.stderr.decode()[-2000:]


def test_two_processes_compiling_one_program_at_once_both_succeed(tmp_path):
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(REPO)!r})
        from tests.native.hostile_programs import compiled_agrees, mul_scale
        compiled_agrees(*mul_scale({{}}, scale=4.25))
    """)
    env = dict(os.environ, FLUID_NB_CACHE=str(tmp_path))
    runs = [subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
            for _ in range(2)]
    for process in runs:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()[-2000:]
    assert sorted(p.suffix for p in (tmp_path / "native").iterdir()) == [".sha256", ".sha256",
                                                                        ".so", ".so"]


@pytest.mark.parametrize("where", ["a-file", "under-proc", "name-too-long"])
def test_a_cache_folder_that_cannot_be_one_is_a_typed_error(where, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    root = {"a-file": tmp_path / "file", "under-proc": pathlib.Path("/proc/fluid_nb_cache"),
            "name-too-long": tmp_path / ("n" * 300)}[where]
    monkeypatch.setenv("FLUID_NB_CACHE", str(root))
    with pytest.raises(PreconditionNotMet, match="the native build cache: .* expected a "
                                                 "folder it can write"):
        build(_source(5.5))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


# --- arguments ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return mul_scale({})


@pytest.mark.parametrize("call, what", [
    (lambda p, s, f, z: native.compile(p, [f], [z], scope=s), "feed expected a dict"),
    (lambda p, s, f, z: native.compile(p, f, [z], scope="x"), "scope expected a Scope"),
    (lambda p, s, f, z: native.compile(p, f, None, scope=s), "fetch_list expected a list"),
    (lambda p, s, f, z: native.compile(p, f, z, scope=s), "fetch_list expected a list"),
    (lambda p, s, f, z: native.compile(p, f, [3], scope=s), "expected a variable or a name"),
    (lambda p, s, f, z: native.compile("p", f, [z], scope=s), "program expected a Program"),
    (lambda p, s, f, z: native.compile(p, {1: 2}, [z], scope=s), "key expected a variable"),
    (lambda p, s, f, z: native.compile(p, f, [z], scope=s, march_native="yes"),
     "march_native expected True or False"),
    (lambda p, s, f, z: native.compile(p, f, [z], scope=s, target=3), "target expected"),
    (lambda p, s, f, z: native.generate(p, feed=[f], scope=s), "feed expected a dict"),
    (lambda p, s, f, z: native.generate(p, feed=f, fetch=z, scope=s), "fetch_list expected"),
])
def test_a_wrong_argument_is_refused_at_the_call(small, call, what):
    with pytest.raises(InvalidType, match=what):
        call(*small)


@pytest.mark.parametrize("arguments, what", [
    (dict(feed="x"), "feed expected a dict"), (dict(fetch_list=3), "fetch_list expected"),
    (dict(scope=1), "scope expected a Scope")])
def test_a_compiled_program_refuses_a_wrong_argument(small, arguments, what, tmp_path,
                                                     monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    program, scope, feed, fetch = small
    compiled = native.compile(program, feed, [fetch], scope=scope)
    with pytest.raises(InvalidType, match=what):
        compiled.run(**{"feed": feed, "scope": scope, **arguments})


# --- fluid-nb compile's files ---------------------------------------------------------------
def _compile(tmp_path, *options):
    np.save(tmp_path / "x.npy", np.load(MLP / "input.npy"))
    return cli(["--debug", "compile", str(MLP / "separate"), "--feed",
                f"x={tmp_path / 'x.npy'}", *map(str, options)])


def test_an_output_that_is_a_directory_is_refused_with_nothing_written(tmp_path):
    """(It used to leave ``out.part`` beside the directory.)"""
    (tmp_path / "out").mkdir()
    with pytest.raises(InvalidArgument, match="-o .* expected the path of a file to write, "
                                              "but received a directory"):
        _compile(tmp_path, "-o", tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "x.npy"]
    assert not list((tmp_path / "out").iterdir())


def test_a_binary_in_a_missing_folder_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(NotFound, match="--binary .* expected a path in an existing folder"):
        _compile(tmp_path, "-o", tmp_path / "m.cc", "--binary", tmp_path / "no" / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_a_failing_compiler_is_quoted_briefly_with_its_log(tmp_path, monkeypatch):
    noisy = tmp_path / "bin" / "c++"
    noisy.parent.mkdir()
    noisy.write_text("#!/bin/sh\nfor i in $(seq 200); do echo \"error line $i\" >&2; done\n"
                     "exit 1\n")
    noisy.chmod(0o755)
    monkeypatch.setenv("CXX", str(noisy))
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(PreconditionNotMet) as refused:
        _compile(tmp_path, "-o", tmp_path / "m.cc", "--binary", tmp_path / "m")
    message = str(refused.value)
    assert len(message.splitlines()) < 12 and "error line 1" in message
    assert "error line 200" not in message
    log, = (tmp_path / "cache" / "native" / "logs").glob("build-*.log")
    assert str(log) in message and "error line 200" in log.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cache", "x.npy"]
    assert sorted(p.name for p in (tmp_path / "cache" / "native").iterdir()) == ["logs"]


def test_a_compile_that_works_writes_the_source_and_the_binary_only(tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path / "cache"))
    assert _compile(tmp_path, "-o", tmp_path / "m.cc", "--binary", tmp_path / "m") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "m", "m.cc", "x.npy"]
    assert not list((tmp_path / "cache" / "native").iterdir())  # the staging folder went
    assert os.access(tmp_path / "m", os.X_OK)
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([str(tmp_path / "m"), str(MLP / "separate"), str(tmp_path / "x.npy"),
                           str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    want = np.load(MLP / "expected.npy")
    got, = [np.load(p) for p in out.iterdir()]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_build_for_this_machine_is_cached_under_what_the_machine_is(tmp_path, monkeypatch):
    """With march_native the library holds this CPU's instructions: a cache folder shared
    with a machine of another kind must not hand it over, so the key names the machine;
    a portable build's key does not."""
    from fluid_nb.rewriters.native import build as build_module
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    source = _source(1.25)
    here, _ = build(source, march_native=True)
    portable, _ = build(source)
    command = build_module.compiler()[0]
    monkeypatch.setitem(build_module._machines, command, "-march= another-kind")
    elsewhere, was_cached = build(source, march_native=True)
    assert not was_cached and len({here, portable, elsewhere}) == 3
    assert build(source) == (portable, True)
