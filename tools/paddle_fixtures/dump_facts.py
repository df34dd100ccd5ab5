"""Print format facts about Paddle's framework.proto and the generated fixtures.

Reads (does not write) tests/fixtures/paddle/.  Run after the generators:
    paddle-venv/bin/python tools/paddle_fixtures/dump_facts.py
"""

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
from google.protobuf import descriptor_pb2, text_format  # noqa: E402
from paddle.base.proto import framework_pb2 as F  # noqa: E402

def _label(f):
    return descriptor_pb2.FieldDescriptorProto.Label.Name(f.label)[len("LABEL_"):].lower()


def _type(f):
    if f.type_name:
        return f.type_name.lstrip(".")
    return descriptor_pb2.FieldDescriptorProto.Type.Name(f.type)[len("TYPE_"):].lower()


def dump_enum(e, indent):
    print("%senum %s { %s }" % (indent, e.name, ", ".join("%s=%d" % (v.name, v.number) for v in e.value)))


def dump_message(m, indent=""):
    print("%smessage %s {" % (indent, m.name))
    for e in m.enum_type:
        dump_enum(e, indent + "  ")
    for n in m.nested_type:
        dump_message(n, indent + "  ")
    for f in m.field:
        d = " [default=%s]" % f.default_value if f.HasField("default_value") else ""
        print("%s  %s %s %s = %d%s" % (indent, _label(f), _type(f), f.name, f.number, d))
    print("%s}" % indent)


def proto_listing():
    """Dump framework.proto from the FileDescriptorProto embedded in framework_pb2."""
    fp = descriptor_pb2.FileDescriptorProto()
    F.DESCRIPTOR.CopyToProto(fp)
    print("== framework.proto: file=%s package=%s syntax=%s"
          % (fp.name, fp.package, fp.syntax or "proto2 (unset)"))
    for e in fp.enum_type:
        dump_enum(e, "")
    for m in fp.message_type:
        dump_message(m)


def load_desc(path):
    d = F.ProgramDesc()
    with open(path, "rb") as f:
        d.ParseFromString(f.read())
    return d


def presence():
    path = os.path.join(C.FIXTURE_ROOT, "inference/mlp/combined/model.pdmodel")
    d = load_desc(path)
    print("\n== mlp model.pdmodel: version=%s  has_version=%s" % (d.version.version, d.HasField("version")))
    print("op_version_map:", text_format.MessageToString(d.op_version_map, as_one_line=True))
    b = d.blocks[0]
    print("block0: idx=%d parent_idx=%d forward_block_idx=%d has_forward_block_idx=%s"
          % (b.idx, b.parent_idx, b.forward_block_idx, b.HasField("forward_block_idx")))
    for name in ("fc_0.w_0", "fc_0.tmp_0", "x", "feed"):
        v = next(v for v in b.vars if v.name == name)
        print("-- var %s (ListFields: %s)" % (name, [f.name for f, _ in v.ListFields()]))
        print(text_format.MessageToString(v))
    op = b.ops[1]
    print("-- op[1] (ListFields: %s)" % [f.name for f, _ in op.ListFields()])
    print(text_format.MessageToString(op))
    # attr presence per attr
    print("attr fields present:", [(a.name, [f.name for f, _ in a.ListFields()]) for a in op.attrs])
    for path in ("training/fit_a_line_sgd/main.pdmodel",):
        d = load_desc(os.path.join(C.FIXTURE_ROOT, path))
        print("\n== %s: version=%s has_version=%s op_version_map entries=%d"
              % (path, d.version.version, d.HasField("version"), len(d.op_version_map.pair)))
        b = d.blocks[0]
        for name in ("fc_0.w_0", "fc_0.tmp_0", "x"):
            v = next(v for v in b.vars if v.name == name)
            print("-- var %s:" % name, text_format.MessageToString(v, as_one_line=True))


def hexdump(data, n=64):
    for off in range(0, min(n, len(data)), 16):
        chunk = data[off:off + 16]
        print("%08x  %-48s %s" % (off, " ".join("%02x" % c for c in chunk),
                                 "".join(chr(c) if 32 <= c < 127 else "." for c in chunk)))


def param_files():
    sep = os.path.join(C.FIXTURE_ROOT, "inference/mlp/separate")
    for name in ("fc_2.b_0", "fc_0.w_0"):
        with open(os.path.join(sep, name), "rb") as f:
            data = f.read()
        print("\n== %s (%d bytes)" % (name, len(data)))
        hexdump(data)
    # combined == concatenation of separate files in sorted-name order?
    for model in ("mlp", "linreg", "cnn"):
        root = os.path.join(C.FIXTURE_ROOT, "inference", model)
        with open(os.path.join(root, "combined/model.pdiparams"), "rb") as f:
            comb = f.read()
        names = sorted(n for n in os.listdir(os.path.join(root, "separate")) if n != "__model__")
        cat = b"".join(open(os.path.join(root, "separate", n), "rb").read() for n in names)
        print("%s: pdiparams == concat(separate files sorted by name): %s  (%d bytes, order %s)"
              % (model, comb == cat, len(comb), names))


def op_types():
    import json

    for path in ("inference/mlp/meta.json",):
        print("\n%s op types: %s" % (path, json.load(open(os.path.join(C.FIXTURE_ROOT, path)))["op_types"]))
    m = json.load(open(os.path.join(C.FIXTURE_ROOT, "training/fit_a_line_sgd/meta.json")))
    print("fit_a_line_sgd main op types:", m["main_op_types"])
    print("fit_a_line_sgd startup op types:", m["startup_op_types"])


if __name__ == "__main__":
    proto_listing()
    presence()
    param_files()
    op_types()
