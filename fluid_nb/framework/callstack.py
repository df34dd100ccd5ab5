"""Where each op was built: the Python call stack that appended it.

Fluid records, in every op's ``op_callstack`` attribute, the stack of the code that created
the op (``traceback.format_stack()``, innermost frame first, one string per frame:
``'  File "net.py", line 12, in conv_bn\\n    conv = fluid.layers.conv2d(...)\\n'``). The
views read it to group ops by the layer call and the user's functions that made them, and
saved programs keep it.

Building a program should not pay for text nobody reads, so an op keeps only its frames'
code objects and instruction offsets, in one flat tuple (``Operator.callstack``, taken by
:func:`capture`: a frame's line number costs a search of its line table, the offset is read
as it is); lines are found, and strings made, when someone reads them (:func:`frames`, and
:func:`paddle_strings` when the program is saved). :func:`frames` gives
``(filename, line, function)`` outermost first from either form, so a program built here and
one loaded from a Paddle file are read the same way.
"""
import bisect
import dis
import linecache
import os
import re

from .. import c_parts

#: frames kept per op: enough for a model's own nesting (a ResNet's stage, block, conv+bn,
#: layer, helper) with the notebook cell or script above it
MAX_FRAMES = 32

_PADDLE_FRAME = re.compile(r'File "([^"]*)", line (\d+), in ([^\n]*)')


# capture(skip=1, max_frames=MAX_FRAMES): the calling stack, innermost first, as one flat
# tuple (code, instruction offset, code, instruction offset, ...): one object per op, since
# a live loop keeps every op's stack. ``skip`` counts frames as sys._getframe(skip) inside
# a Python function would (1: the function calling capture, 2: its caller). The walk stops
# after the first module-level frame (a script's or a notebook cell's body: what lies above
# it is the interpreter's or the kernel's machinery) or max_frames frames (64 at most). It
# is C: every appended op walks its stack, and the walk in Python was a tenth of a live
# op's time.
_op_record = c_parts.load("fluid_nb.framework._op_record", "an op record's C parts")
capture = _op_record.capture
# untrack_arguments(*slots): an op's argument dicts (slot -> tuple of names) and their tuples
# made untracked by the cyclic collector when the op is made: they hold no container, and
# a live loop's ops otherwise walk through every collection until a full one (C, as above)
untrack_arguments = _op_record.untrack_arguments


def pairs(stack):
    """``(code, instruction offset)`` per frame of a stack :func:`capture` took."""
    return zip(stack[::2], stack[1::2])


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CONTEXTLIB = os.path.join("", "contextlib.py")


def is_internal(filename):
    """True for fluid_nb's own files (and contextlib's, whose frames a ``with`` adds)."""
    return filename.startswith(_PACKAGE_DIR) or filename.endswith(_CONTEXTLIB)


#: file name -> True when it is fluid_nb's own (or contextlib's). Keyed by the name, not
#: the code object: a string caches its hash, a code object hashes its bytecode each time
_internal_files = {}


class SourceLine:
    """Where an op was added: indexable as ``(filename, lineno, line)``. The line's text is
    read only when asked for, since most recorded ops are never shown or fail."""

    __slots__ = ("filename", "lineno")

    def __init__(self, filename, lineno):
        self.filename, self.lineno = filename, lineno

    @property
    def line(self):
        return linecache.getline(self.filename, self.lineno).strip()

    def __getitem__(self, index):
        return (self.filename, self.lineno, self.line)[index]

    def __iter__(self):
        return iter((self.filename, self.lineno, self.line))

    def __len__(self):
        return 3

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __hash__(self):
        return hash((self.filename, self.lineno))

    def __repr__(self):
        return f"SourceLine({self.filename!r}, {self.lineno}, {self.line!r})"


def user_line(stack):
    """The :class:`SourceLine` of the innermost frame of ``stack`` (as :func:`capture`
    takes it) outside fluid_nb, or None when every frame is the package's own."""
    internal = _internal_files
    for code, offset in pairs(stack):
        filename = code.co_filename
        inside = internal.get(filename)
        if inside is None:
            inside = internal[filename] = is_internal(filename)
        if not inside:
            return SourceLine(filename, line_of(code, offset))
    return None


_line_starts = {}  # code object -> (offsets, lines) where each line's instructions start


def line_of(code, offset):
    """The source line of the instruction at ``offset`` in ``code``."""
    table = _line_starts.get(code)
    if table is None:
        starts = sorted((start, line) for start, line in dis.findlinestarts(code)
                        if line is not None)
        table = _line_starts[code] = ([s for s, _ in starts], [l for _, l in starts])
        if len(_line_starts) > 4096:  # (code objects of cells run once: do not keep them all)
            _line_starts.pop(next(iter(_line_starts)))
    offsets, lines = table
    k = bisect.bisect_right(offsets, offset) - 1
    return lines[k] if k >= 0 else code.co_firstlineno


class SavedCallstack:
    """The ``op_callstack`` strings a file gave an op, and the attribute's place among the
    op's attributes there (so the op is written back byte for byte). Kept beside the
    attributes, not in them: it says where the op came from, not what it does."""

    __slots__ = ("strings", "position")

    def __init__(self, strings, position):
        self.strings, self.position = list(strings), position

    def __bool__(self):
        return True

    def __repr__(self):
        return f"SavedCallstack({len(self.strings)} frames)"


def frames(op, memo=None):
    """``[(filename, line, function), ...]`` outermost first: where ``op`` was built, from
    the stack taken when it was appended or the ``op_callstack`` attribute a file gave it;
    empty when neither is there. ``memo`` (a dict the caller keeps while the stacks it
    reads are alive) keeps each frame's tuple: a program's ops share most of their frames."""
    stack = getattr(op, "callstack", None)
    if not stack:
        return []
    if not isinstance(stack, SavedCallstack):
        memo = {} if memo is None else memo
        found = []
        for code, offset in reversed(list(pairs(stack))):
            key = (id(code), offset)  # (a code object hashes its bytecode: its id is cheap)
            frame = memo.get(key)
            if frame is None:
                frame = memo[key] = (code.co_filename, line_of(code, offset), code.co_name)
            found.append(frame)
        return found
    strings = stack.strings
    found = []
    for text in strings:
        match = _PADDLE_FRAME.search(text) if isinstance(text, str) else None
        if match is not None:
            found.append((match.group(1), int(match.group(2)), match.group(3).strip()))
    # Fluid 1.x writes the innermost frame first (reversed ``format_stack``), Paddle 2.x
    # the outermost (``extract_stack``): the module-level frame says which end is the top
    if found and found[0][2] != "<module>":
        found.reverse()
    return found


def paddle_strings(stack):
    """``op_callstack`` as Fluid writes it: one ``traceback`` string per frame, innermost
    first, each with its source line (read now, when the program is saved)."""
    if isinstance(stack, SavedCallstack):
        return list(stack.strings)
    strings = []
    for code, offset in pairs(stack):
        filename, line = code.co_filename, line_of(code, offset)
        text = f'  File "{filename}", line {line}, in {code.co_name}\n'
        source = linecache.getline(filename, line).strip()
        if source:
            text += f"    {source}\n"
        strings.append(text)
    return strings
