"""Regenerate fluid_nb/proto/framework.desc (a serialized FileDescriptorSet) from framework.proto.

Needs grpcio-tools (for its bundled protoc). The .desc file is committed so that the package
needs only the protobuf runtime, any version from 4.21 on.
"""
import pathlib
import sys

from grpc_tools import protoc

here = pathlib.Path(__file__).resolve().parent.parent / "fluid_nb" / "proto"
rc = protoc.main(["protoc", f"-I{here}", f"--descriptor_set_out={here / 'framework.desc'}",
                  str(here / "framework.proto")])
sys.exit(rc)
