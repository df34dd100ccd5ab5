"""Regenerate the committed descriptor sets (serialized FileDescriptorSets) from their .proto:
fluid_nb/proto/framework.desc (Paddle's program format) and
fluid_nb/distributed/send_recv.desc (the parameter server's messages).

Needs grpcio-tools (for its bundled protoc). The .desc files are committed so that the package
needs only the protobuf runtime, any version from 4.21 on.
"""
import pathlib
import sys

from grpc_tools import protoc

package = pathlib.Path(__file__).resolve().parent.parent / "fluid_nb"
for here, name in ((package / "proto", "framework"), (package / "distributed", "send_recv")):
    rc = protoc.main(["protoc", f"-I{here}", f"--descriptor_set_out={here / (name + '.desc')}",
                      str(here / f"{name}.proto")])
    if rc:
        sys.exit(rc)
