"""Hostile input to the distributed runtime, by where it comes in:

- messages: VariableMessages that lie about what they hold (sizes whose product overflows,
  bytes that do not match the dims, unknown types, bad LoDs and rows), through the one
  validator a received value passes (``messages.decode``), and valid ones it must take;
- server: every class of malformed request sent as raw bytes to a live ``listen_and_serv``,
  which must answer each with its error status and keep serving (its parameter unchanged);
- transpile: bad arguments to ``DistributeTranspiler.transpile``, which must leave the main
  and startup programs as they were;
- plans: bad process counts, ports and addresses for ``fluid-nb launch``;
- launcher: jobs whose roles fail, die of a signal, or ignore SIGTERM while an interrupt
  stops the job; no role nor anything a role started may be left running.
"""
import io
import os
import random
import signal
import sys
import textwrap
import threading
import time

import grpc
import numpy as np

import fluid_nb as fluid
from fluid_nb.distributed import launcher as launch, messages
from fluid_nb.distributed import send_recv_pb2 as pb
from fluid_nb.errors import InvalidArgument, NotFound, Unimplemented
from fluid_nb.framework import unique_name
from fluid_nb.rewriters.transpiler.ps_dispatcher import HashName, RoundRobin
from fluid_nb.tensor.tensor import LoDTensor
from fluid_nb.rewriters.transpiler.distribute_transpiler import DistributeTranspiler
from tests.distributed.malformed import malformed_requests, send_raw
from tests.distributed.test_launch_stops import _alive
from tests.errors.corpus import Case, state_of
from tests.errors.hostile import family_test

SEED = 20240611
ENDPOINTS = "127.0.0.1:6170,127.0.0.1:6171"


# --- messages through the validator ---------------------------------------------------------

def _message(**fields):
    """A float32 [2, 3] LoDTensor message for ``w`` with ``fields`` claimed instead."""
    message = messages.encode("w", LoDTensor(np.ones((2, 3), "float32")))
    for name, value in fields.items():
        if name in ("lod", "dims"):
            message.ClearField(name)
            if name == "dims":
                message.dims.extend(value)
            else:
                for level in value:
                    message.lod.add().lod_data.extend(level)
        else:
            setattr(message, name, value)
    return message


def _rows_message(rows, height=10, values=None, **fields):
    """A SelectedRows message for ``table@GRAD``: ``rows`` (a list, or raw bytes) over
    ``values`` (default: one float32 row of width 2 per row)."""
    count = len(rows) // 8 if isinstance(rows, bytes) else len(rows)
    values = np.ones((count, 2), "float32") if values is None else values
    message = pb.VariableMessage(varname="table@GRAD", type=pb.SELECTED_ROWS, data_type=5,
                                 dims=list(values.shape), serialized=values.tobytes(),
                                 slr_height=height)
    message.rows = rows if isinstance(rows, bytes) else np.asarray(rows, "<i8").tobytes()
    for name, field in fields.items():
        setattr(message, name, field)
    return message


BAD_MESSAGES = {
    "dims-overflow-2^32x2^32": _message(dims=[2 ** 32, 2 ** 32], serialized=b""),
    "dims-overflow-2^62x4": _message(dims=[2 ** 62, 4], serialized=b""),
    "dims-overflow-int64-max": _message(dims=[2 ** 63 - 1], serialized=b""),
    "dims-overflow-product-of-three": _message(dims=[2 ** 21, 2 ** 21, 2 ** 22],
                                               serialized=b""),
    "dims-zero-beside-huge": _message(dims=[0, 2 ** 62], serialized=b""),
    "dims-negative": _message(dims=[-2, -3]),
    "dims-int64-min": _message(dims=[-2 ** 63, 1], serialized=b""),
    "dims-huge-declared-size": _message(dims=[2 ** 20, 2 ** 20], serialized=b""),
    "dims-rank-33": _message(dims=[1] * 33, serialized=b"\0" * 4),
    "dims-rank-1000": _message(dims=[1] * 1000, serialized=b"\0" * 4),
    "bytes-short": _message(serialized=b"\0" * 20),
    "bytes-long": _message(serialized=b"\0" * 28),
    "bytes-none": _message(serialized=b""),
    "bytes-of-float64-declared-float32": _message(serialized=b"\0" * 48),
    "dtype-unknown-99": _message(data_type=99),
    "dtype-negative": _message(data_type=-1),
    "dtype-a-variable-type": _message(data_type=7),
    "dtype-bfloat16": _message(data_type=22, serialized=b"\0" * 12),
    "type-nccl-id": _message(type=2),
    "type-unknown-77": _message(type=77),
    "varname-empty": _message(varname=""),
    "lod-decreasing": _message(lod=[[0, 2, 1]], lod_level=1),
    "lod-not-from-zero": _message(lod=[[1, 2]], lod_level=1),
    "lod-past-the-rows": _message(lod=[[0, 5]], lod_level=1),
    "lod-short-of-the-rows": _message(lod=[[0, 1]], lod_level=1),
    "lod-level-count-too-high": _message(lod=[[0, 2]], lod_level=3),
    "lod-level-count-negative": _message(lod=[[0, 2]], lod_level=-1),
    "lod-empty-level": _message(lod=[[]], lod_level=1),
    "lod-levels-disagree": _message(lod=[[0, 5], [0, 1, 2]], lod_level=2),
    "lod-on-a-scalar": _message(dims=[], serialized=b"\0" * 4, lod=[[0, 1]], lod_level=1),
    "lod-offsets-huge": _message(lod=[[0, 2 ** 62, 2]], lod_level=1),
    "rows-not-int64-bytes": _rows_message(b"\0" * 13),
    "rows-fewer-than-values": _rows_message([0], values=np.ones((2, 2), "float32")),
    "rows-past-the-height": _rows_message([0, 10]),
    "rows-negative": _rows_message([-1, 0]),
    "rows-height-negative": _rows_message([], values=np.ones((0, 2), "float32"),
                                          slr_height=-5),
    "rows-of-a-scalar-value": _rows_message([0], values=np.float32(1.0).reshape(())),
}

GOOD_MESSAGES = {
    "valid-float32": _message(),
    "valid-zero-size": _message(dims=[0, 3], serialized=b""),
    "valid-scalar": _message(dims=[], serialized=b"\0" * 4),
    "valid-lod": _message(lod=[[0, 1, 2]], lod_level=1),
    "valid-int64": messages.encode("ids", LoDTensor(np.arange(5, dtype="int64"))),
    "valid-selected-rows": _rows_message([3, 7]),
}


def _random_bad_dims(rng):
    """Dims with at least one size a message cannot hold, the others ordinary."""
    hostile = [2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, -1, -2 ** 63]
    dims = [rng.choice([0, 1, 2, 3, 7, 1024]) for _ in range(rng.randint(1, 5))]
    dims[rng.randrange(len(dims))] = rng.choice(hostile)
    return dims


def message_cases():
    rng = random.Random(SEED)
    for i in range(12):
        BAD_MESSAGES[f"dims-random-{i}"] = _message(dims=_random_bad_dims(rng), serialized=b"")

    def decoding(message):
        return lambda: messages.decode(message, "listen_and_serv at 127.0.0.1:1")

    return ([Case("distributed", f"message:{name}", decoding(message), mentions=("expected",))
             for name, message in BAD_MESSAGES.items()]
            + [Case("distributed", f"message:{name}", decoding(message), must_fail=False)
               for name, message in GOOD_MESSAGES.items()])


# --- a live server --------------------------------------------------------------------------

_SERVER = {}
_REFUSALS = {grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
             grpc.StatusCode.NOT_FOUND: NotFound,
             grpc.StatusCode.UNIMPLEMENTED: Unimplemented}


def _serve():
    """One sync server for 2 trainers (w0 = ones [3, 2]) in a thread of this process; it
    serves for the rest of the process (no trainer ever completes)."""
    if _SERVER:
        return
    from tests.distributed.processes import free_endpoints
    from tests.distributed.runtime_programs import pserver_programs
    endpoint, = free_endpoints(1)
    main, startup = pserver_programs([endpoint], 0, 2, 0)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    threading.Thread(target=exe.run, args=(main,), kwargs={"scope": scope},
                     daemon=True).start()
    channel = grpc.insecure_channel(endpoint)
    grpc.channel_ready_future(channel).result(timeout=20)
    _SERVER.update(endpoint=endpoint, channel=channel)


def _parameter():
    """The server's w0, as a trainer reads it without a barrier (or why it cannot be read)."""
    try:
        reply = _SERVER["channel"].unary_unary(f"/{pb.SERVICE}/GetVariableNoBarrier")(
            pb.VariableMessage(varname="w0").SerializeToString(), timeout=5)
    except grpc.RpcError as error:
        return f"not served: {error.code()}"
    return messages.decode(pb.VariableMessage.FromString(reply), "test").array.tolist()


def server_cases():
    def sending(method, payload, code):
        def act():
            status, details = send_raw(_SERVER["channel"], method, payload)
            if status is None:
                raise AssertionError("the server took a malformed request")
            if status != code:
                raise AssertionError(f"answered {status}, not {code}: {details}")
            raise _REFUSALS[status](details)
        return act

    return [Case("distributed", f"server:{label}", sending(method, payload, code),
                 state=_parameter, setup=_serve, mentions=("listen_and_serv",))
            for label, method, payload, code in malformed_requests("w0@GRAD.trainer_0", [3, 2])]


# --- transpile arguments --------------------------------------------------------------------

def _programs():
    main, startup = fluid.Program(), fluid.Program()
    with unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup


TRANSPILE_ARGUMENTS = {
    "program-a-string": {"program": "main"},
    "program-an-int": {"program": 42},
    "program-a-list": {"program": []},
    "program-a-variable": {"program": "a variable"},
    "startup-an-int": {"startup_program": 42},
    "startup-a-string": {"startup_program": "startup"},
    "startup-the-main-program": {"startup_program": "main itself"},
    "pservers-empty": {"pservers": ""},
    "pservers-a-comma": {"pservers": ","},
    "pservers-no-port": {"pservers": "127.0.0.1"},
    "pservers-port-0": {"pservers": "127.0.0.1:0"},
    "pservers-port-65536": {"pservers": "127.0.0.1:65536"},
    "pservers-port-negative": {"pservers": "127.0.0.1:-1"},
    "pservers-port-arabic-digits": {"pservers": "127.0.0.1:\u0663\u0660"},
    "pservers-twice": {"pservers": "127.0.0.1:6170,127.0.0.1:6170"},
    "pservers-newline": {"pservers": "127.0.0.1:6170\n"},
    "pservers-space-in-host": {"pservers": "a b:6170"},
    "pservers-an-int": {"pservers": 6170},
    "pservers-a-list": {"pservers": ["127.0.0.1:6170"]},
    "trainers-0": {"trainers": 0},
    "trainers-negative": {"trainers": -3},
    "trainers-a-string": {"trainers": "2"},
    "trainers-a-float": {"trainers": 2.0},
    "trainers-true": {"trainers": True},
    "trainer-id-negative": {"trainer_id": -1},
    "trainer-id-past-trainers": {"trainer_id": 2},
    "trainer-id-a-string": {"trainer_id": "0"},
    "trainer-id-none": {"trainer_id": None},
    "sync-mode-a-string": {"sync_mode": "yes"},
    "sync-mode-2": {"sync_mode": 2},
    "sync-mode-an-array": {"sync_mode": np.array([1, 0])},
    "current-endpoint-an-int": {"current_endpoint": 3},
    "current-endpoint-two": {"current_endpoint": "127.0.0.1:1,127.0.0.1:2"},
}


def transpile_cases():
    def case(name, arguments, must_fail=True):
        held = {}

        def setup():
            held["main"], held["startup"] = _programs()

        def act():
            main, startup = held["main"], held["startup"]
            given = dict({"trainer_id": 0, "program": main, "startup_program": startup,
                          "pservers": ENDPOINTS, "trainers": 2}, **arguments)
            if given["program"] == "a variable":
                given["program"] = main.global_block().var("x")
            if given["startup_program"] == "main itself":
                given["startup_program"] = main
            DistributeTranspiler().transpile(given.pop("trainer_id"), **given)

        return Case("distributed", f"transpile:{name}", act, setup=setup, must_fail=must_fail,
                    state=lambda: state_of(held["main"], held["startup"])())

    return ([case(name, arguments) for name, arguments in TRANSPILE_ARGUMENTS.items()]
            + [case("valid", {}, must_fail=False),
               case("valid-sync-mode-0", {"sync_mode": 0}, must_fail=False)])


# --- dispatchers ----------------------------------------------------------------------------

def dispatcher_cases():
    def dispatching(kind, label, varlist):
        dispatcher = kind(["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"])
        dispatcher.dispatch(["w"])  # a position other than the start
        return Case("distributed", f"dispatch:{kind.__name__}-{label}",
                    lambda: dispatcher.dispatch(varlist), state=lambda: dispatcher._step,
                    must_fail=varlist is not VALID)

    def making(kind, label, endpoints):
        return Case("distributed", f"dispatcher:{kind.__name__}-{label}",
                    lambda: kind(endpoints))

    made = []
    for kind in (RoundRobin, HashName):
        for label, varlist in (("an-int-among-names", ["a", 5, "b"]), ("none", None),
                               ("a-string", "abc"), ("a-name-of-none", [_Unnamed()])):
            made.append(dispatching(kind, label, varlist))
        made.append(dispatching(kind, "a-lone-surrogate-name", VALID))
        for label, endpoints in (("no-endpoints", []), ("a-string", "127.0.0.1:6170"),
                                 ("an-int-endpoint", [6170])):
            made.append(making(kind, label, endpoints))
    return made


class _Unnamed:
    name = None


#: a list of names that is valid, however odd its one name
VALID = ["\ud800w"]


# --- launch plans ---------------------------------------------------------------------------

PLANS = {
    "pservers-0": (0, 1, None, None, None),
    "pservers-negative": (-2, 1, None, None, None),
    "pservers-a-string": ("2", 1, None, None, None),
    "pservers-a-float": (1.5, 1, None, None, None),
    "pservers-true": (True, 1, None, None, None),
    "trainers-none": (1, None, None, None, None),
    "trainers-a-million": (1, 10 ** 6, None, None, None),
    "counts-past-the-limit-together": (600, 600, None, None, None),
    "start-port-70000": (1, 1, None, 70000, None),
    "start-port-negative": (1, 1, None, -5, None),
    "start-port-0": (1, 1, None, 0, None),
    "start-port-range-past-65535": (2, 2, None, 65533, None),
    "start-port-a-string": (1, 1, None, "6170", None),
    "start-port-a-float": (1, 1, None, 6170.5, None),
    "ips-empty": (1, 1, "", None, None),
    "ips-blank": (1, 1, "  ", None, None),
    "ips-a-comma": (1, 1, ",", None, None),
    "ips-an-empty-entry": (1, 1, "10.0.0.1,,10.0.0.2", None, None),
    "ips-three-octets": (1, 1, "10.0.0", None, None),
    "ips-octet-256": (1, 1, "256.1.1.1", None, None),
    "ips-twice": (1, 1, "10.0.0.1,10.0.0.1", None, "10.0.0.1"),
    "ips-punctuation": (1, 1, "bad host!", None, None),
    "ips-leading-hyphen": (1, 1, "-oProxyCommand=x", None, None),
    "ips-newline": (1, 1, "10.0.0.1\n10.0.0.2", None, None),
    "ips-an-int": (1, 1, 42, None, None),
    "ips-a-list-with-an-int": (1, 1, ["10.0.0.1", 5], None, None),
    "node-ip-five-octets": (1, 1, "10.0.0.1,10.0.0.2", None, "10.0.0.1.5"),
    "node-ip-not-listed": (1, 1, "10.0.0.1,10.0.0.2", None, "10.0.0.3"),
}


def plan_cases():
    def planning(arguments):
        return lambda: launch.plan(*arguments)
    return ([Case("distributed", f"plan:{name}", planning(arguments), mentions=("launch",))
             for name, arguments in PLANS.items()]
            + [Case("distributed", "plan:valid-across-machines",
                    planning((2, 2, "10.0.0.1,10.0.0.2", 65531, "10.0.0.2")), must_fail=False)])


# --- the launcher with roles that misbehave -------------------------------------------------

ROLE = textwrap.dedent("""\
    import os, signal, subprocess, sys, time
    mode = sys.argv[1]
    # the server says it has started its grandchild: the trainer fails only after that, or a
    # slowly started server would be stopped before it had a grandchild to leave behind
    started = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server-started")
    child = subprocess.Popen(["sleep", "300"])
    print("grandchild", child.pid, flush=True)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.environ.get("TRAINING_ROLE") == "PSERVER":
        open(started, "w").close()
    if os.environ.get("PADDLE_TRAINER_ID") == "0" and mode in ("fail", "killed"):
        deadline = time.monotonic() + 60
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        if mode == "fail":
            os._exit(5)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(300)
""")


def launcher_cases(workdir):
    script = workdir / "role.py"
    script.write_text(ROLE)

    def job(mode, status, interrupt_after=None):
        def act():
            (workdir / "server-started").unlink(missing_ok=True)
            processes, _ = launch.plan(1, 1)
            out = io.StringIO()
            grace, launch._STOP_GRACE = launch._STOP_GRACE, 1.0
            stopper = threading.Timer(interrupt_after or 0,
                                      lambda: os.kill(os.getpid(), signal.SIGINT))
            if interrupt_after:
                stopper.start()
            try:
                got = launch.run(processes, str(script), [mode], out=out)
            except KeyboardInterrupt:
                got = "interrupted"
            finally:
                stopper.cancel()
                launch._STOP_GRACE = grace
            pids = [int(line.rsplit(" ", 1)[1]) for line in out.getvalue().splitlines()
                    if "] grandchild " in line]
            left = [pid for pid in pids + [p.popen.pid for p in processes] if _alive(pid)]
            if got != status or len(pids) != 2 or left:
                raise AssertionError(f"status {got} (expected {status}), grandchildren "
                                     f"{pids}, left running {left}:\n{out.getvalue()}")
        return act

    def missing_script():
        processes, _ = launch.plan(1, 1)
        launch.run(processes, str(workdir / "no_such_script.py"), [], out=io.StringIO())

    return [
        Case("distributed", "launcher:a-trainer-fails-leaving-a-grandchild",
             job("fail", 5), must_fail=False),
        Case("distributed", "launcher:a-trainer-dies-of-sigkill",
             job("killed", 128 + signal.SIGKILL), must_fail=False),
        Case("distributed", "launcher:roles-ignore-sigterm-then-ctrl-c",
             job("stubborn", "interrupted", interrupt_after=2.0), must_fail=False),
        Case("distributed", "launcher:no-such-script", missing_script, mentions=("script",)),
    ]


def cases(workdir):
    return (message_cases() + server_cases() + transpile_cases() + dispatcher_cases()
            + plan_cases() + launcher_cases(workdir))


test_corpus = family_test(cases, seconds=20,
                          allowed_programs=(os.path.basename(sys.executable), "sleep"))
