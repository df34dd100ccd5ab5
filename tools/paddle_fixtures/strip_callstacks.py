"""Drop ``op_callstack`` from the saved fixture programs, with Paddle itself.

Paddle records in every op the Python traceback of the script that built it
(``op_callstack``: file paths of the generating machine). The tests do not need it, and a
fixture should not carry the paths of the machine that made it, so the generators' output
is passed through this script (Paddle re-serialises each program without that attribute;
everything else stays as Paddle wrote it)::

    <paddle-venv>/bin/python tools/paddle_fixtures/strip_callstacks.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

C.import_paddle()
from paddle.base import core  # noqa: E402

PROGRAM_FILES = (".pdmodel", ".pb")
#: fixtures whose call stacks are what they are for (their paths are already neutral)
KEEP = ("resnet_callstack.pb",)


def is_program_file(name):
    return name.endswith(PROGRAM_FILES) or name == "__model__"


def strip(path):
    with open(path, "rb") as f:
        desc = core.ProgramDesc(f.read())
    removed = 0
    for b in range(desc.num_blocks()):
        block = desc.block(b)
        for i in range(block.op_size()):
            op = block.op(i)
            if op.has_attr("op_callstack"):
                op.remove_attr("op_callstack")
                removed += 1
    if removed:
        C.write_bytes(path, desc.serialize_to_string())
    return removed


def main():
    total = 0
    for root, _, files in os.walk(C.FIXTURE_ROOT):
        for name in sorted(files):
            if is_program_file(name) and name not in KEEP:
                total += strip(os.path.join(root, name))
    print(f"removed op_callstack from {total} ops")


if __name__ == "__main__":
    main()
