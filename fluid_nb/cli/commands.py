"""``fluid-nb``: look at, render and run Fluid program files; the demo; JupyterLab.

    fluid-nb show model.pdmodel                  readable listing of a program file
    fluid-nb show model.pdiparams                its tensors: dtype, shape, min/max/mean, histogram
    fluid-nb render model.pdmodel -o graph.html  interactive graph page (.html), .dot or .svg
    fluid-nb run inference_dir --feed x=x.npy    run a saved model, print the fetched arrays
                                                 (an ONNX model.onnx runs in onnxruntime)
    fluid-nb compile inference_dir --feed x=x.npy -o model.cc --binary model
                                                 the model as C++ (and a binary, no Python)
    fluid-nb export inference_dir -o model.onnx  the model as ONNX, with an op-by-op report
    fluid-nb demo -o fluid_nb_demo.html          train fit_a_line, write its graph page
    fluid-nb lab                                 JupyterLab on the bundled notebooks
    fluid-nb launch --pservers 2 --trainers 2 train.py
                                                 a parameter-server job: its processes with
                                                 the PADDLE_* environment, logs prefixed

A program file is a ``*.pdmodel``, a ``__model__``, or a directory holding one of them; it
is decoded by fluid_nb's own codec (nothing in it is executed). ``show`` and ``render`` also
read an ONNX model (``*.onnx``). Errors print as one line and exit with status 1
(``--debug`` shows the traceback).
"""
import argparse
import os
import signal
import subprocess
import sys
import threading

import numpy as np

from ..errors import FluidError, InvalidArgument, NotFound, PreconditionNotMet, expected

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fluid_nb/


# --- program files ---------------------------------------------------------------------------
def find_program_file(path):
    """The program file that ``path`` names: the file itself, or in a directory its
    ``__model__`` or its only ``*.pdmodel``, or the ``x.pdmodel`` of a path prefix ``x``."""
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "__model__")):
            return os.path.join(path, "__model__")
        found = sorted(f for f in os.listdir(path) if f.endswith(".pdmodel"))
        if len(found) == 1:
            return os.path.join(path, found[0])
        raise NotFound(f"{path}: a directory holding __model__ or one *.pdmodel file expected, "
                       f"but it holds {'several: ' + ', '.join(found) if found else 'neither'}")
    if not os.path.exists(path) and os.path.isfile(path + ".pdmodel"):
        return path + ".pdmodel"  # a Paddle 2.x path prefix, as load_inference_model takes
    if not os.path.isfile(path):
        raise NotFound(f"{path}: a program file (*.pdmodel, __model__ or a directory holding "
                       f"one) expected, but there is no such file or directory")
    return path


def load_program(path):
    """The Program decoded from the program file ``path`` (see :func:`find_program_file`),
    or the Program drawing an ONNX model (``*.onnx``; see ``fluid.onnx.to_program``)."""
    from ..framework.program import Program
    if is_onnx(path):
        from ..rewriters.onnx import to_program
        return to_program(path)
    file = find_program_file(path)
    with open(file, "rb") as f:
        data = f.read()
    try:
        return Program.parse_from_string(data)
    except FluidError as exc:  # name the file: the codec knows only the bytes
        raise type(exc)(f"{file}: {exc}") from exc
    except Exception as exc:  # a damaged or foreign file: say which, not a protobuf trace
        raise InvalidArgument(f"{file}: ProgramDesc bytes expected, but decoding failed: "
                              f"{exc}") from exc


# --- show / render -----------------------------------------------------------------------------
def cmd_show(args, out):
    from ..viz import program_listing
    from ..viz.params_table import is_params_path, params_model, params_text
    if args.params or is_params_path(args.file):
        print(params_text(params_model(args.file)["rows"], title=args.file), file=out)
        return 0
    print(program_listing(load_program(args.file)), file=out)
    return 0


def render_svg(dot_text):
    """SVG text of DOT text, through the ``graphviz`` package and Graphviz's ``dot`` binary."""
    try:
        import graphviz
    except ImportError:
        raise PreconditionNotMet("render: .svg needs the Python package 'graphviz' (pip install "
                                 "graphviz) and Graphviz's 'dot' program (e.g. apt-get install "
                                 "graphviz), but the package is not installed; write .html "
                                 "instead (it lays the graph out in the browser)") from None
    try:
        return graphviz.Source(dot_text).pipe(format="svg").decode("utf-8")
    except graphviz.ExecutableNotFound:
        raise PreconditionNotMet("render: .svg needs Graphviz's 'dot' program on PATH (e.g. "
                                 "apt-get install graphviz), but it was not found; write .html "
                                 "instead (it lays the graph out in the browser)") from None


def cmd_render(args, out):
    from ..viz import assemble_dot, html_page, program_listing, program_model
    from ..rewriters.onnx.files import output_path, write_atomically
    kind = os.path.splitext(args.output)[1].lower()
    if kind not in (".html", ".htm", ".svg", ".dot", ".gv"):
        raise InvalidArgument(f"render: -o expected a file ending in .html, .svg or .dot, but "
                              f"received {args.output!r}")
    output_path(args.output, "render -o")  # before any work: a folder that is not there
    program = load_program(args.file)
    title = args.title or os.path.basename(os.path.normpath(args.file))
    model = program_model(program, title=title)
    if kind in (".html", ".htm"):
        text = html_page(model, title, listing=program_listing(program))
    elif kind == ".svg":
        text = render_svg(assemble_dot(model))
    else:
        text = assemble_dot(model)
    # all at once: a failed write leaves no partial page
    write_atomically(args.output, text.encode("utf-8"), "render -o")
    print(f"wrote {args.output} ({model['stats']['ops']} ops, {len(text)} bytes)", file=out)
    return 0


# --- run ---------------------------------------------------------------------------------------
def load_model_for_run(path, executor, scope, command="run"):
    """``[program, feed names, fetch vars]`` of a saved inference model: a directory
    (``__model__`` + parameter files, or one ``x.pdmodel`` + ``x.pdiparams``), a ``__model__``
    file, or an ``x.pdmodel`` file with its ``x.pdiparams`` (or parameter files) beside it."""
    from ..api import io
    if is_onnx(path):
        raise InvalidArgument(expected(
            command, "model", "a Fluid inference model (a directory, __model__ or x.pdmodel)",
            f"the ONNX model {path!r}: fluid-nb run runs it (in onnxruntime); compile and "
            f"export take the Fluid model it was exported from"))
    file = find_program_file(path)
    folder, name = os.path.split(file)
    if name.endswith(".pdmodel"):
        prefix = file[:-len(".pdmodel")]
        if os.path.isfile(prefix + ".pdiparams"):
            return io.load_inference_model(prefix, executor, scope=scope)
    return io.load_inference_model(folder or ".", executor, model_filename=name, scope=scope)


def parse_feed(item):
    """``name=path.npy`` -> ``(name, array)``; the file is read without unpickling."""
    name, sep, file = item.partition("=")
    if not sep or not name or not file:
        raise InvalidArgument(f"run: --feed expected name=array.npy, but received {item!r}")
    try:
        return name, np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise NotFound(f"run: --feed {name}: file {file!r} expected, but it does not "
                       f"exist") from None
    except ValueError as exc:
        raise InvalidArgument(f"run: --feed {name}: a .npy array file expected in {file!r}, "
                              f"but reading it failed: {exc}") from None


def array_summary(name, array):
    """A few lines about a fetched array: shape, dtype, min/max/mean, leading values."""
    array = np.asarray(array)
    head = f"{name}: shape {list(array.shape)} {array.dtype}"
    if array.size and np.issubdtype(array.dtype, np.number):
        head += (f"  min {array.min():.6g}  max {array.max():.6g}  "
                 f"mean {array.mean(dtype=np.float64):.6g}")
    with np.printoptions(precision=5, threshold=20, edgeitems=3, suppress=True):
        body = np.array2string(array)
    return head + "\n" + "\n".join("  " + line for line in body.splitlines())


def is_onnx(path):
    return str(path).lower().endswith(".onnx")


def check_feed_names(command, feeds, feed_names):
    """Refuse a --feed naming no input of the model, and an input with no --feed; both
    errors list the model's inputs."""
    inputs = ", ".join(feed_names) or "none"
    unknown = [n for n in feeds if n not in feed_names]
    if unknown:
        raise InvalidArgument(expected(
            command, "--feed", f"the model's inputs ({inputs})",
            f"{', '.join(unknown)}, {'which is' if len(unknown) == 1 else 'which are'} not "
            f"{'an input' if len(unknown) == 1 else 'inputs'} of the model"))
    missing = [n for n in feed_names if n not in feeds]
    if missing:
        raise InvalidArgument(f"{command}: a --feed for each input of the model expected "
                              f"({inputs}), but {', '.join(missing)} has none")


def model_and_feeds(args, command):
    """(executor, scope, program, feed names, fetch vars, feeds) of a command that takes a
    saved model and a --feed for each of its inputs."""
    import fluid_nb as fluid
    feeds = dict(parse_feed(item) for item in args.feed)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    program, feed_names, fetch_vars = load_model_for_run(args.file, exe, scope, command)
    check_feed_names(command, feeds, feed_names)
    return exe, scope, program, feed_names, fetch_vars, feeds


def run_onnx(args):
    """``[(name, array)]`` fetched from the ONNX model ``args.file``, run in onnxruntime (an
    ONNX model's ops are ONNX's, not the executor's; see ``fluid_nb.rewriters.onnx.runtime``)."""
    from ..rewriters.onnx.runtime import OnnxModel
    feeds = dict(parse_feed(item) for item in args.feed)
    model = OnnxModel(args.file, "run")
    check_feed_names("run", feeds, list(model.inputs))
    return model.run(feeds, args.fetch)


def cmd_run(args, out):
    if is_onnx(args.file):
        fetched = run_onnx(args)
    else:
        exe, scope, program, feed_names, fetch_vars, feeds = model_and_feeds(args, "run")
        if args.fetch:
            from ..framework.program import without_feed_fetch_ops
            program = without_feed_fetch_ops(program)
            names = fetch_list = list(args.fetch)
        else:
            fetch_list, names = fetch_vars, [v.name for v in fetch_vars]
        fetched = zip(names, exe.run(program, feed=feeds, fetch_list=fetch_list, scope=scope))
    for name, value in fetched:
        print(array_summary(name, value), file=out)
        if args.save_dir:
            os.makedirs(args.save_dir, exist_ok=True)
            path = os.path.join(args.save_dir, name.replace("/", "_") + ".npy")
            np.save(path, np.asarray(value), allow_pickle=False)
            print(f"  saved {path}", file=out)
    return 0


# --- compile ---------------------------------------------------------------------------------------
def cmd_compile(args, out):
    from ..rewriters.native.standalone import check_output_paths, write_standalone
    check_output_paths(args.output, args.binary)
    _, scope, program, feed_names, fetch_vars, feeds = model_and_feeds(args, "compile")
    native = write_standalone(program, feeds, fetch_vars, scope, args.output, args.binary,
                              target=args.target)
    print(f"wrote {args.output}: {len(native.functions)} ops, inputs "
          f"{', '.join(f'{n} {list(feeds[n].shape)}' for n in feed_names)}", file=out)
    if args.binary:
        print(f"built {args.binary}; run: {args.binary} PARAMS "
              f"{' '.join(n + '.npy' for n in sorted(feeds))} OUT_DIR", file=out)
    return 0


# --- export ----------------------------------------------------------------------------------------
def cmd_export(args, out):
    import fluid_nb as fluid
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    program, _, fetch_vars = load_model_for_run(args.file, exe, scope, "export")
    report = fluid.onnx.export(program, args.output, scope=scope, opset=args.opset,
                               strict=args.strict)
    print(report, file=out)
    return 0 if report.path is not None else 1


# --- demo / lab --------------------------------------------------------------------------------
def cmd_demo(args, out):
    from .demo import run_demo
    run_demo(args.output, steps=args.steps, log=lambda text: print(text, file=out),
             progress=not args.no_progress)
    return 0


def notebooks_dir(explicit=None):
    """The folder ``fluid-nb lab`` opens: ``explicit``, else the ``notebooks/`` folder next to
    the package (a source checkout); NotFound when it does not exist."""
    folder = explicit if explicit is not None else \
        os.path.join(os.path.dirname(PACKAGE_DIR), "notebooks")
    if not os.path.isdir(folder):
        how = "the folder given by --dir" if explicit is not None else \
            "the notebooks/ folder of a fluid_nb source checkout (pip install -e .)"
        raise NotFound(f"lab: {how} expected at {folder}, but there is no such directory; "
                       f"pass --dir DIR")
    return os.path.abspath(folder)


def lab_command(folder, extra=(), as_root=False):
    """The command line that starts JupyterLab with ``folder`` as its root; ``as_root`` adds
    ``--allow-root`` (Jupyter refuses to run as root without it) unless ``extra`` has it."""
    extra = list(extra)
    if as_root and "--allow-root" not in extra:
        extra.append("--allow-root")
    # Jupyter's `jupyter lab`, started so that an interrupt stops it cleanly (server/lab.py)
    return [sys.executable, "-m", "fluid_nb.server.lab", f"--ServerApp.root_dir={folder}",
            *extra]


def _running_as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def hand_over_to(command):
    """Run ``command`` in place of this process. On POSIX the process becomes it (exec), so
    Ctrl-C, SIGTERM and the exit status are JupyterLab's own and stopping ``fluid-nb lab``
    stops the server; elsewhere it runs as a child that is waited for (Ctrl-C reaches the
    child from the console, and the child decides)."""
    if os.name == "posix":
        os.execv(command[0], command)
    child = subprocess.Popen(command)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def cmd_lab(args, out):
    import importlib.util
    if importlib.util.find_spec("jupyterlab") is None:
        raise PreconditionNotMet("lab: the jupyterlab package expected in this Python "
                                 f"({sys.executable}), but it is not installed; "
                                 "pip install -e . installs it")
    as_root = _running_as_root()
    command = lab_command(notebooks_dir(args.dir), args.lab_args, as_root=as_root)
    if as_root and "--allow-root" not in args.lab_args:
        print("running as root: passing --allow-root to JupyterLab", file=out)
    print("starting: " + " ".join(command), file=out)
    out.flush()
    return hand_over_to(command)


# --- main ----------------------------------------------------------------------------------------
def build_parser():
    summary, examples = __doc__.split("\n\n")[:2]
    parser = argparse.ArgumentParser(
        prog="fluid-nb", description=summary.replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + examples + "\n\n`fluid-nb COMMAND --help` says more.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    show = sub.add_parser("show", help="print the readable listing of a program file (or an "
                                       "ONNX model), or the table of a parameter file's "
                                       "tensors")
    show.add_argument("file", help="*.pdmodel, __model__, or a directory holding one; an "
                                   "ONNX model *.onnx; *.pdiparams, __params__ or a directory "
                                   "of parameter files")
    show.add_argument("--params", action="store_true",
                      help="the parameters of a model directory instead of its program")
    show.set_defaults(handler=cmd_show)

    render = sub.add_parser("render", help="draw a program file (or an ONNX model) as .html, "
                                           ".svg or .dot")
    render.add_argument("file", help="*.pdmodel, __model__, or a directory holding one; an "
                                     "ONNX model *.onnx")
    render.add_argument("-o", "--output", required=True, help="OUT.html, OUT.svg or OUT.dot")
    render.add_argument("--title", help="page title (default: the file name)")
    render.set_defaults(handler=cmd_render)

    run = sub.add_parser("run", help="run a saved inference model (or an ONNX model) on "
                                     ".npy inputs")
    run.add_argument("file", help="an inference model directory, __model__, x.pdmodel "
                                  "(with x.pdiparams beside it) or the path prefix x; or an "
                                  "ONNX model x.onnx (run in onnxruntime)")
    run.add_argument("--feed", action="append", default=[], metavar="NAME=ARRAY.npy",
                     help="an input value (repeat for several inputs)")
    run.add_argument("--fetch", action="append", default=[], metavar="NAME",
                     help="a variable to fetch (default: the model's outputs)")
    run.add_argument("--save-dir", help="also save each fetched array as NAME.npy here")
    run.set_defaults(handler=cmd_run)

    comp = sub.add_parser("compile", help="a saved inference model as standalone C++ or CUDA "
                                          "(and a binary): parameters from Paddle's files, "
                                          "inputs and outputs as .npy")
    comp.add_argument("file", help="an inference model directory, __model__, x.pdmodel "
                                   "(with x.pdiparams beside it) or the path prefix x")
    comp.add_argument("--feed", action="append", default=[], metavar="NAME=ARRAY.npy",
                      help="an example input: the code is specialised on its shape and type")
    comp.add_argument("-o", "--output", required=True, help="the C++ (or .cu) file to write")
    comp.add_argument("--binary", help="also build it into this executable")
    comp.add_argument("--target", default="cpp",
                      help="cpp (the default; built with $CXX or c++ against NumPy's "
                           "OpenBLAS) or cuda (built with nvcc; opens cuBLAS when it runs)")
    comp.set_defaults(handler=cmd_compile)

    exp = sub.add_parser("export", help="a saved inference model as an ONNX model, with a "
                                        "report of every op")
    exp.add_argument("file", help="an inference model directory, __model__, x.pdmodel "
                                  "(with x.pdiparams beside it) or the path prefix x")
    exp.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    exp.add_argument("--opset", type=int, default=17, help="the ONNX opset (default 17)")
    exp.add_argument("--strict", action="store_true",
                     help="write nothing if any op does not convert")
    exp.set_defaults(handler=cmd_export)

    demo = sub.add_parser("demo", help="train fit_a_line headless and write its graph page")
    demo.add_argument("-o", "--output", default="fluid_nb_demo.html", help="the HTML page")
    demo.add_argument("--steps", type=int, default=100, help="SGD steps to train")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.set_defaults(handler=cmd_demo)

    lab = sub.add_parser(
        "lab", help="start JupyterLab on the bundled notebooks (other arguments are passed "
                    "on to jupyter lab)",
        usage="fluid-nb lab [--dir DIR] [JUPYTER LAB ARGUMENTS ...]",
        description="Start JupyterLab with the fluid_nb extension on the notebooks/ folder "
                    "(its models/ folder holds example program files to open).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Any other argument is passed on to jupyter lab unchanged, e.g.\n"
               "  fluid-nb lab --port 8890 --no-browser\n"
               "(see `jupyter lab --help`). Run as root, --allow-root is added for you.")
    lab.add_argument("--dir", help="root folder (default: the checkout's notebooks/)")
    lab.set_defaults(handler=cmd_lab, lab_args=[])  # other arguments go to jupyter lab

    launch = sub.add_parser(
        "launch", help="start a parameter-server job: servers and trainers running one "
                       "script with the PADDLE_* environment Fluid's launchers set",
        usage="fluid-nb launch --pservers N --trainers M [--ips IP,IP] [--node-ip IP] "
              "[--start-port P] [--ray ADDRESS|auto] [--max-restarts R] "
              "[--checkpoint-every K] [--log-dir DIR] script.py [ARGS ...]")
    launch.add_argument("--pservers", type=int, default=2, help="parameter servers (2)")
    launch.add_argument("--trainers", type=int, default=2, help="trainers (2)")
    launch.add_argument("--ips", help="the machines, comma-separated (default: this one, "
                                      "127.0.0.1); run the same command on each")
    launch.add_argument("--node-ip", help="this machine's IP among --ips (default: found)")
    launch.add_argument("--start-port", type=int,
                        help="first port (default: free ports on one machine, 6170 across "
                             "several)")
    launch.add_argument("--log-dir", help="also write each process's output to "
                                          "DIR/serverlog.I and DIR/workerlog.J")
    launch.add_argument("--ray", metavar="ADDRESS|auto",
                        help="run the processes on the Ray cluster at ADDRESS (auto: "
                             "RAY_ADDRESS's) instead of this machine (pip install "
                             "\"fluid_nb[ray]\")")
    launch.add_argument("--max-restarts", type=int, default=0,
                        help="start a server that dies again, on its endpoint, from its "
                             "last checkpoint, up to R times (default 0: a death ends the "
                             "job)")
    launch.add_argument("--checkpoint-every", type=int,
                        help="servers save their shard every K optimize rounds (to "
                             "DIR/checkpoint.I with --log-dir; default 10 with "
                             "--max-restarts, else none)")
    launch.add_argument("script", help="the training script")
    launch.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="arguments for the script")
    launch.set_defaults(handler=cmd_launch)
    return parser


def cmd_launch(args, out):
    """Run the job; its status is the launch's (the first failure's, or 0)."""
    if args.ray is not None:
        return _launch_on_ray(args, out)
    from ..distributed import launcher as launch
    processes, _ = launch.plan(args.pservers, args.trainers, args.ips, args.start_port,
                               args.node_ip)
    # a SIGTERM to the launcher stops the job as Ctrl-C does; the handler is the
    # command's own, put back when it returns
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum)) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        return launch.run(processes, args.script, args.script_args, args.log_dir, out,
                          max_restarts=args.max_restarts,
                          checkpoint_every=args.checkpoint_every)
    except KeyboardInterrupt:  # Ctrl-C: the job has been stopped; say so in one line
        print(f"fluid-nb launch: interrupted; its {len(processes)} processes were stopped",
              file=sys.stderr)
        return 128 + signal.SIGINT
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _launch_on_ray(args, out):
    """``--ray``: the job on a Ray cluster (Ray places the processes, so no --ips,
    --node-ip or --start-port); 0, or the failed process's status after its message."""
    from ..distributed.job import JobFailed
    from ..distributed.start import launch
    for option, value in (("--ips", args.ips), ("--node-ip", args.node_ip),
                          ("--start-port", args.start_port)):
        if value is not None:
            raise InvalidArgument(expected("launch", option, "no value with --ray (Ray "
                                           "places the processes)", value))
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum)) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        launch(args.script, args.script_args, pservers=args.pservers, trainers=args.trainers,
               ray=args.ray, max_restarts=args.max_restarts,
               checkpoint_every=args.checkpoint_every, log_dir=args.log_dir, out=out)
        return 0
    except JobFailed as failure:
        print(f"fluid-nb launch: {failure}", file=sys.stderr)
        code = failure.exit_code
        return 1 if code is None else code if code > 0 else 128 - code
    except KeyboardInterrupt:  # Ctrl-C: the job has been stopped
        print("fluid-nb launch: interrupted; the job was stopped", file=sys.stderr)
        return 128 + signal.SIGINT
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv=None, out=None):
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status.
    Expected failures (typed fluid_nb errors, missing files) print one line on stderr."""
    out = out if out is not None else sys.stdout
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # only `lab` passes options on (to jupyter lab)
        if args.command != "lab":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.lab_args = unknown
    try:
        code = args.handler(args, out)
        out.flush()
        return code
    except BrokenPipeError:
        # the reader went away (`fluid-nb show m.pdmodel | head`): stop quietly, as Unix tools
        # do; stdout goes to devnull so the interpreter's final flush has nowhere to fail
        if hasattr(out, "fileno"):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
            except (OSError, ValueError):
                pass
        return 0
    except (FluidError, OSError) as exc:
        if args.debug:
            raise
        print(f"fluid-nb {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
