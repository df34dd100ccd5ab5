"""How text from a program reaches generated source: never as code.

A program file may name its variables, op types and attributes with any characters, so
nothing it says is written into the source as it stands. Variables are referred to by
:func:`identifier`, a name of the generator's own making (a prefix no header or compiler
defines, then the variable's name reduced to ``[A-Za-z0-9_]`` for the reader); the names
themselves appear only inside string literals and ``//`` comments, through :func:`escape`.
"""
import re

#: every identifier made here starts with it: no runtime header, keyword or system macro
#: begins this way (a test scans the headers), so a variable can never name one of them
PREFIX = "v_"
#: the readable part of an identifier is cut here: a name may be megabytes long
READABLE_CHARS = 32

#: bytes written as themselves: printable ASCII but the ones that could end or bend a
#: literal or a comment (backslash, quote, the '?' of trigraphs, the '*' and '/' of
#: comment delimiters)
_PLAIN = frozenset(range(0x20, 0x7F)) - set(b'\\"?*/')
_ESCAPES = tuple(chr(b) if b in _PLAIN else f"\\{b:03o}" for b in range(256))


def escape(text):
    """``text`` as printable ASCII that is safe both between the quotes of a C/C++ string
    literal and after ``//`` in a comment, and means the same bytes in the literal.

    Invariant: the result holds only printable ASCII; every byte of ``text``'s UTF-8 form
    outside printable ASCII, and each of ``\\ " ? * /``, becomes a three-digit octal escape
    (three digits, so a following digit is never taken into it); so it has no newline, no
    quote, no ``*/``, no ``//``, no ``??`` trigraph, and never ends in a backslash. A
    string that is not valid Unicode (a lone surrogate) is escaped byte by byte as well."""
    data = str(text).encode("utf-8", "surrogatepass")
    return "".join(_ESCAPES[b] for b in data)


def comment(text):
    """A ``//`` comment line saying ``text`` (escaped: it ends at the end of the line)."""
    return "// " + escape(text)


def c_string(text):
    """A C/C++ string literal of ``text``'s UTF-8 bytes."""
    return f'"{escape(text)}"'


def identifier(name, taken):
    """A C++ identifier for the variable ``name``, not in ``taken`` (which it joins).

    Invariant: it matches ``v_[A-Za-z0-9]+(_[A-Za-z0-9]+)*`` (optionally ``_<k>``), is at
    most ``len(PREFIX) + READABLE_CHARS`` characters plus that count, holds no double
    underscore (reserved in C++), and differs from every identifier made before with the
    same ``taken``, whatever ``name`` holds."""
    readable = re.sub(r"[^0-9A-Za-z]+", "_", str(name)).strip("_")[:READABLE_CHARS]
    base = PREFIX + (readable.rstrip("_") or "x")
    text, k = base, 1
    while text in taken:
        text, k = f"{base}_{k}", k + 1
    taken.add(text)
    return text
