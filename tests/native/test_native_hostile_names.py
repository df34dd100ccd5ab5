"""Opening a stranger's model never runs its code: whatever a program names its variables,
the generated C++ refers to them by identifiers of its own and writes the names only inside
escaped string literals and comments, and the compiled code (a library, or the standalone
binary) computes what the interpreter does."""
import ctypes
import random
import re

import pytest

from fluid_nb.rewriters import native
from fluid_nb.rewriters.native import names
from fluid_nb.rewriters.native.build import RUNTIME, build

from .hostile_programs import (binary_agrees, binary_names, byte_names, compiled_agrees,
                               lod_pool, mul_scale, trick_names, tricks)


def _decoded(escaped):
    """The bytes a C compiler reads from the escaped text (octal escapes, else the char)."""
    out, k = bytearray(), 0
    while k < len(escaped):
        if escaped[k] == "\\":
            out.append(int(escaped[k + 1:k + 4], 8))
            k += 4
        else:
            out.append(ord(escaped[k]))
            k += 1
    return bytes(out)


def _samples():
    rng = random.Random(5)
    texts = [chr(b) for b in range(256)] + ["", "??/", "*/", "a\\", "\u2028", "\ud800"]
    texts += ["".join(chr(rng.randrange(0x110000)) if rng.random() < 0.1 else
                      chr(rng.randrange(256)) for _ in range(length))
              for length in (1, 2, 3, 7, 64, 1000) for _ in range(20)]
    return texts


def test_escape_writes_every_byte_as_printable_ascii_that_means_that_byte():
    for text in _samples():
        escaped = names.escape(text)
        assert all(0x20 <= ord(c) < 0x7F for c in escaped), repr(text)
        for danger in ('"', "*/", "//", "??", "/*"):
            assert danger not in escaped, (text, escaped)
        assert not escaped.endswith("\\")
        assert _decoded(escaped) == text.encode("utf-8", "surrogatepass")


def test_the_compiler_reads_each_escaped_literal_as_the_bytes_it_stands_for(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    texts = [t for t in _samples() if t]
    literals = ",\n".join(f"{{{names.c_string(t)}, sizeof({names.c_string(t)}) - 1}}"
                          for t in texts)
    source = ('#include <cstddef>\nstruct Text { const char* data; size_t size; };\n'
              f'extern "C" const Text fluid_texts[] = {{\n{literals}\n}};\n')
    library = ctypes.CDLL(str(build(source)[0]))

    class Text(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]

    table = (Text * len(texts)).in_dll(library, "fluid_texts")
    for text, entry in zip(texts, table):
        assert ctypes.string_at(entry.data, entry.size) == \
            text.encode("utf-8", "surrogatepass"), repr(text)


def test_identifiers_are_the_generators_own_and_unique():
    taken = set()
    made = [names.identifier(text, taken) for text in _samples() + _samples()]
    assert len(set(made)) == len(made)
    for text in made:
        assert re.fullmatch(r"v_[A-Za-z0-9]+(_[A-Za-z0-9]+)*", text) and "__" not in text
        assert len(text) <= len(names.PREFIX) + names.READABLE_CHARS + 4


def test_no_runtime_header_defines_a_name_with_the_identifiers_prefix():
    for header in RUNTIME.iterdir():
        tokens = set(re.findall(r"\b[A-Za-z_]\w*", header.read_text()))
        assert not {t for t in tokens if t.startswith(names.PREFIX)}, header.name


@pytest.mark.parametrize("label", sorted(tricks("MARKER")))
def test_a_name_made_to_break_the_source_compiles_to_the_interpreters_values(
        label, tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "EXECUTED"
    program, scope, feed, fetch = mul_scale(trick_names(tricks(marker)[label]))
    compiled_agrees(program, scope, feed, fetch)
    assert not marker.exists()


def test_names_holding_every_byte_value_compile_to_the_interpreters_values(
        tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    for first in range(1, 256, 64):
        compiled_agrees(*mul_scale(byte_names(first, min(first + 63, 255))))


def test_a_program_with_lod_and_hostile_names_compiles_to_the_interpreters_values(
        tmp_path, monkeypatch):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "EXECUTED"
    for label in ("newline-static-initializer", "quote", "state-member", "define"):
        program, scope, feed, fetch = lod_pool(trick_names(tricks(marker)[label]))
        source = native.generate(program, feed=feed, fetch=[fetch], scope=scope)
        assert source.dynamic
        compiled_agrees(program, scope, feed, fetch)
    assert not marker.exists()


def test_the_binary_of_a_model_with_hostile_names_runs_no_payload(tmp_path, monkeypatch):
    """The saved model's names hold every byte value and each trick; the binary built by
    ``fluid-nb compile --binary`` predicts what the interpreter does, and nothing else."""
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "EXECUTED"
    binary_agrees(tmp_path, binary_names(marker))
    assert not marker.exists()
