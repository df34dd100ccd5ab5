"""The wire format: a variable as Paddle's VariableMessage and back, refusals of messages
that claim what they do not hold, and the client's errors without any server."""
import time

import grpc
import numpy as np
import pytest

from fluid_nb import flags
from fluid_nb.distributed import messages
from fluid_nb.distributed import send_recv_pb2 as pb
from fluid_nb.distributed.client import RPCClient
from fluid_nb.errors import InvalidArgument, Unavailable
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows

from .processes import free_endpoints


def _round_trip(name, value):
    wire = messages.encode(name, value, trainer_id=3).SerializeToString()
    return messages.decode(pb.VariableMessage.FromString(wire), "test")


def test_the_message_has_paddles_fields_and_numbers():
    fields = {f.name: f.number for f in pb.VariableMessage.DESCRIPTOR.fields}
    assert fields == {"varname": 1, "type": 2, "data_type": 3, "dims": 4, "lod_level": 5,
                      "lod": 6, "slr_height": 7, "serialized": 8, "rows": 9,
                      "out_varname": 10, "profile": 11, "trainer_id": 12, "table_name": 13}
    assert pb.METHODS[:4] == ("SendVariable", "GetVariable", "GetVariableNoBarrier",
                              "PrefetchVariable")
    assert (pb.LOD_TENSOR, pb.SELECTED_ROWS) == (0, 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16",
                                   "bool", "uint8", "int8"])
def test_a_tensor_travels_with_its_dtype_dims_and_bytes(dtype):
    array = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    got = _round_trip("x", LoDTensor(array))
    assert got.array.dtype == array.dtype and got.array.flags.writeable
    np.testing.assert_array_equal(got.array, array)


def test_a_lod_tensor_keeps_its_levels():
    value = LoDTensor(np.arange(14, dtype="float32").reshape(7, 2), [[0, 2, 3], [0, 1, 4, 7]])
    message = messages.encode("seq", value)
    assert message.lod_level == 2 and list(message.lod[1].lod_data) == [0, 1, 4, 7]
    got = _round_trip("seq", value)
    assert got.lod() == [[0, 2, 3], [0, 1, 4, 7]]
    np.testing.assert_array_equal(got.array, value.array)


def test_selected_rows_travel_with_rows_and_height():
    value = SelectedRows([7, 2, 7], 10, LoDTensor(np.ones((3, 4), "float32")))
    got = _round_trip("emb@GRAD", value)
    assert isinstance(got, SelectedRows) and got.rows() == [7, 2, 7] and got.height() == 10
    np.testing.assert_array_equal(got.value.array, value.value.array)


def test_a_scalar_tensor_is_one_element_of_no_dims():
    got = _round_trip("lr", LoDTensor(np.asarray(0.5, dtype="float32")))
    assert got.array.shape == () and float(got.array) == 0.5


def _protobufs_bytes(name, value, trainer_id):
    """What the generated class writes for ``value``, its fields set one by one."""
    message = pb.VariableMessage(varname=name, trainer_id=trainer_id)
    if isinstance(value, SelectedRows):
        message.type, message.slr_height = pb.SELECTED_ROWS, value.height()
        message.rows = np.asarray(value.rows(), "<i8").tobytes()
        value = value.value
    for level in value.lod():
        message.lod.add().lod_data.extend(level)
    message.lod_level = len(value.lod())
    array = value.array
    little = array.astype(array.dtype.newbyteorder("<"))
    message.data_type = {"float32": 5, "float64": 6, "int64": 3, "int32": 2, "bool": 0,
                         "float16": 4, "uint8": 20, "int8": 21}[little.dtype.name]
    message.dims.extend(array.shape)
    message.serialized = little.tobytes()
    return message.SerializeToString()


@pytest.mark.parametrize("value", [
    LoDTensor(np.arange(12, dtype="float32").reshape(3, 4)),
    LoDTensor(np.arange(300, dtype="float64").reshape(3, 100).T),  # not C-contiguous
    LoDTensor(np.arange(6, dtype=">i4")),  # big-endian: written little-endian
    LoDTensor(np.asarray(0.5, dtype="float32")),  # no dims
    LoDTensor(np.zeros((0, 3), "float32")),  # no elements
    LoDTensor(np.ones((2, 200, 300), "float16")),  # byte counts of three varint bytes
    LoDTensor(np.array([True, False, True])),  # data type 0, left out
    LoDTensor(np.arange(10, dtype="int64").reshape(5, 2), [[0, 2, 5], [0, 1, 2, 3, 4, 5]]),
    LoDTensor(np.zeros((0, 2), "float32"), [[0]]),
    SelectedRows([0, 5, 5, 2], 1000, LoDTensor(np.ones((4, 3), "int8"))),
    SelectedRows([], 0, LoDTensor(np.ones((0, 3), "uint8"))),
], ids=lambda value: type(value).__name__)
@pytest.mark.parametrize("name,trainer_id", [("w", 0), ("fc_0.w_0@GRAD", 1),
                                             ("ünïcode" * 30, 2 ** 40)])
def test_a_message_is_written_as_protobuf_writes_it(value, name, trainer_id):
    assert messages.serialize(name, value, trainer_id) == \
        _protobufs_bytes(name, value, trainer_id)


def test_a_variable_sent_again_with_another_shape_is_written_with_it():
    first = messages.serialize("h", LoDTensor(np.ones((2, 3), "float32")))
    again = messages.serialize("h", LoDTensor(np.ones((4, 3), "float64")))
    got = messages.decode(pb.VariableMessage.FromString(again), "test")
    assert first != again and got.array.shape == (4, 3) and got.array.dtype == "float64"


def test_the_remembered_message_heads_stay_bounded():
    for i in range(3 * messages._MAX_HEADS):
        messages.serialize(f"step_{i}", LoDTensor(np.ones(1, "float32")))
        assert len(messages._HEADS) <= messages._MAX_HEADS


def test_a_decoded_value_owns_its_elements():
    wire = messages.serialize("w", LoDTensor(np.arange(4, dtype=">f8")))
    got = messages.decode(pb.VariableMessage.FromString(wire), "test").array
    got += 1  # writable, native order
    assert got.dtype == np.dtype("float64") and got.tolist() == [1.0, 2.0, 3.0, 4.0]


def _message(**fields):
    message = messages.encode("w", LoDTensor(np.ones((2, 3), "float32")))
    for name, value in fields.items():
        if name == "lod":
            del message.lod[:]
            for level in value:
                message.lod.add().lod_data.extend(level)
        elif name == "dims":
            del message.dims[:]
            message.dims.extend(value)
        else:
            setattr(message, name, value)
    return message


@pytest.mark.parametrize("fields,says", [
    ({"serialized": b"\0" * 20}, "serialized bytes expected 24 ([2, 3] of float32), but "
                                 "received 20"),
    ({"dims": [2, -3]}, "dims expected sizes in [0, 2147483647]"),
    # sizes whose int64 product wraps to 0 elements, declared with no bytes
    ({"dims": [2 ** 32, 2 ** 32], "serialized": b""}, "dims expected sizes in [0, "),
    ({"dims": [2 ** 62, 4], "serialized": b""}, "dims expected sizes in [0, "),
    ({"dims": [2 ** 20, 2 ** 20], "serialized": b""}, "dims expected elements of at most "
                                                      "2147483647 bytes"),
    ({"dims": [1] * 33}, "dims expected at most 32 dims, but received 33 dims"),
    ({"data_type": 17}, "data_type expected a data type NumPy holds"),
    ({"data_type": 99}, "data_type expected a data type NumPy holds"),
    ({"type": 2}, "type expected LOD_TENSOR (0) or SELECTED_ROWS (1)"),
    ({"lod": [[0, 1, 3]]}, "lod_level expected the number of LoD levels it carries (1)"),
    ({"lod": [[0, 3, 1]], "lod_level": 1}, "non-decreasing"),
    ({"lod": [[0, 1, 3]], "lod_level": 1}, "expected to end at 2"),
    ({"varname": ""}, "message varname expected a variable name"),
])
def test_a_message_that_claims_what_it_does_not_hold_is_refused(fields, says):
    with pytest.raises(InvalidArgument) as refused:
        messages.decode(_message(**fields), "listen_and_serv at 1.2.3.4:5")
    assert says in str(refused.value)
    assert str(refused.value).startswith("listen_and_serv at 1.2.3.4:5")


def test_selected_rows_outside_the_height_are_refused():
    message = messages.encode("g", SelectedRows([1, 9], 5, LoDTensor(np.ones((2, 2)))))
    with pytest.raises(InvalidArgument, match=r"rows expected row numbers in \[0, "
                                              r"slr_height=5\), but received 1..9"):
        messages.decode(message, "test")
    message = messages.encode("g", SelectedRows([1], 5, LoDTensor(np.ones((2, 2)))))
    with pytest.raises(InvalidArgument, match="one row number per value row"):
        messages.decode(message, "test")


def test_an_endpoint_nobody_serves_is_retried_until_the_deadline(monkeypatch):
    endpoint, = free_endpoints(1)
    monkeypatch.setitem(flags._values, "FLAGS_rpc_deadline", 600)
    rpc = RPCClient()
    start = time.monotonic()
    with pytest.raises(Unavailable) as failed:
        rpc.send_variable(endpoint, "fc_0.w_0@GRAD", LoDTensor(np.ones(2, "float32")))
    spent = time.monotonic() - start
    assert 0.5 < spent < 3
    text = str(failed.value)
    assert text.startswith(f"SendVariable to {endpoint}, variable 'fc_0.w_0@GRAD': the "
                           f"parameter server expected to be reachable and serving")
    assert "Connection refused" in text


class _Failed(grpc.RpcError):
    """A gRPC call's failure as the client sees it: its status code and details."""

    def __init__(self, code, details):
        super().__init__(details)
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


def test_a_deadline_reached_while_a_server_refuses_connections_is_unavailable():
    """When the last try at a server that never answered runs out of deadline (a loaded
    machine's connect outlasting what was left), the call failed because nobody serves
    there: Unavailable with the refusal, not a timeout; a server that answered before and
    now takes too long is a timeout."""
    from fluid_nb.errors import ExecutionTimeout
    refused = _Failed(grpc.StatusCode.UNAVAILABLE, "Connection refused")
    timed_out = _Failed(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")

    def stub(payload, timeout):
        raise timed_out
    rpc = RPCClient()
    start = time.monotonic()
    with pytest.raises(Unavailable, match="no answer after 2 tries .*Connection refused"):
        rpc._retry(refused, "127.0.0.1:9", "SendVariable", "w@GRAD", b"", stub, start, 5.0)
    rpc._reached["127.0.0.1:9"] = 0
    with pytest.raises(ExecutionTimeout, match="an answer expected within 5 s"):
        rpc._retry(refused, "127.0.0.1:9", "SendVariable", "w@GRAD", b"", stub, start, 5.0)


@pytest.mark.parametrize("endpoint", ["localhost", "1.2.3.4:port", "host:70000", 5])
def test_an_endpoint_must_read_ip_port(endpoint):
    with pytest.raises(InvalidArgument, match="endpoint expected 'ip:port'"):
        RPCClient().batch_barrier(endpoint)
