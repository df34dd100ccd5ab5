"""Write notebooks/10_distributed.ipynb (parameter-server training: the programs the
DistributeTranspiler makes, side by side, then a job of 2 servers and 2 trainers, then the
same job on a local Ray cluster watched live) from the cell lists below, the way
``tools/make_notebooks.py`` writes 02-04: no outputs, fixed cell ids::

    python tools/make_distributed_notebook.py            # (re)write it
    python tools/make_distributed_notebook.py --check    # exit 1 if the stored notebook differs
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_notebooks  # noqa: E402  (the cell format all the notebook generators share)

NAME = "10_distributed.ipynb"


def transpiler_cells():
    """The compile-time half: what the transpiler makes of fit_a_line, an MLP and a sparse
    embedding, printed and drawn."""
    return [
        ("md", """\
# Distributed training: one program becomes many

Fluid trains on parameter servers by **rewriting the program**, not by wrapping the model: the
`DistributeTranspiler` takes the ordinary training program (forward, backward, optimizer) and
makes

* a **trainer program**: forward and backward as before, then `send` for each gradient to the
  server that holds its parameter, a `send_barrier`, `recv` for each parameter and a
  `fetch_barrier`; the optimizer ops are gone;
* one **server program** per parameter server: a `listen_and_serv` op whose `optimize_blocks`
  hold the optimizer ops for the parameter blocks that server owns, run once every trainer's
  gradients have arrived.

Large parameters are cut by rows into blocks (`w.block0`, `w.block1`) spread over the servers,
so no one server does all the work. The programs are ordinary programs: they print, save, load
and draw like any other."""),
        ("code", "setup", """\
import numpy as np
import fluid_nb as fluid
from fluid_nb.widgets import DistributedView

PSERVERS = '127.0.0.1:6170,127.0.0.1:6171'
RPC = ('send', 'recv', 'send_barrier', 'fetch_barrier', 'split_byref', 'split_selected_rows',
       'concat', 'distributed_lookup_table')

def rpc_ops(program):
    \"\"\"The transpiler's ops of a trainer program, with where each one talks to.\"\"\"
    for op in program.global_block().ops:
        if op.type in RPC:
            ends = op.attrs.get('epmap') or op.attrs.get('endpoints') or []
            names = op.input('X') if op.type == 'send' else op.output('Out') \\
                if op.type != 'distributed_lookup_table' else op.attr('table_names')
            print(f'{op.type:14s} {names} -> {ends}' if ends else f'{op.type:14s} {names}')

def transpiled(build, trainer_id=0, trainers=2, **config):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        build()
    settings = fluid.DistributeTranspilerConfig()
    for name, value in config.items():
        setattr(settings, name, value)
    t = fluid.DistributeTranspiler(config=settings)
    t.transpile(trainer_id, program=main, startup_program=startup, pservers=PSERVERS,
                trainers=trainers)
    return t, startup"""),
        ("md", """\
## fit_a_line on two servers

The linear regression of the book's first chapter: `fc` 13 -> 1, square error, SGD. Its two
parameters are small, so neither is cut: `RoundRobin` puts the bias on the first server and the
weight on the second. With two trainers in synchronous mode each trainer sends its gradient
under its own name (`fc_0.w_0@GRAD.trainer_0`), and the server averages the copies."""),
        ("code", "fit-a-line", """\
def fit_a_line():
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    pred = fluid.layers.fc(input=x, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)

t, startup = transpiled(fit_a_line)
trainer = t.get_trainer_program(wait_port=False)
rpc_ops(trainer)
print('optimizer ops left in the trainer:',
      [op.type for op in trainer.global_block().ops if op.type == 'sgd'])
for ep, held in t.param_grad_ep_mapping.items():
    print(ep, 'holds', [p.name for p in held['params']])"""),
        ("code", "fit-a-line-servers", """\
for ep in t.pserver_endpoints:
    server = t.get_pserver_program(ep)
    serve, = server.global_block().ops
    print(f'{ep}: listen_and_serv Fanin={serve.attr("Fanin")} '
          f'grad_to_block_id={serve.attr("grad_to_block_id")} '
          f'optimize_blocks={serve.attr("optimize_blocks")}')
    for idx in serve.attr('optimize_blocks'):
        print(f'  block {idx}:', [op.type for op in server.block(idx).ops])"""),
        ("md", """\
The trainer and both servers side by side: blue edges carry gradients to the servers, green
ones parameters back, dashed ones the barriers. Each server's optimize block sums the two
trainers' gradients, scales them by 1/2 and runs `sgd`."""),
        ("code", "fit-a-line-view", "DistributedView.of_transpiler(t, title='fit_a_line: trainer 0 and two servers')"),
        ("md", """\
## An MLP: parameters cut into blocks

The recognize-digits MLP (784-200-200-10). A parameter of more than `min_block_size` (8192)
elements is cut by whole rows into one block per server: `fc_0.w_0` (784 x 200) becomes two
blocks of 392 rows, `fc_1.w_0` two of 100 rows. The trainer cuts each such gradient with
`split_byref` before sending the pieces, and joins the parameter's blocks with `concat` after
receiving them. Adam's moments live on the servers, cut like their parameters."""),
        ("code", "mlp", """\
def mlp():
    img = fluid.layers.data(name='img', shape=[784], dtype='float32')
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    h = fluid.layers.fc(input=img, size=200, act='relu')
    h = fluid.layers.fc(input=h, size=200, act='relu')
    pred = fluid.layers.fc(input=h, size=10, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)

t, startup = transpiled(mlp)
for name, blocks in t.param_var_mapping.items():
    print(f'{name:9s}', [(b.name, list(b.shape)) for b in blocks])
for ep, held in t.param_grad_ep_mapping.items():
    print(ep, 'holds', [p.name for p in held['params']])"""),
        ("code", "mlp-trainer", "rpc_ops(t.get_trainer_program(wait_port=False))"),
        ("code", "mlp-server", """\
server, server_startup = t.get_pserver_programs('127.0.0.1:6170')
for idx in server.global_block().ops[0].attr('optimize_blocks'):
    print(f'block {idx}:', [op.type for op in server.block(idx).ops],
          server.block(idx).ops[-1].input('Param'))
print('the server starts', [(op.output('Out')[0], op.attr('shape'))
                            for op in server_startup.global_block().ops
                            if op.output('Out')[0].startswith('fc_0.w_0')])"""),
        ("code", "mlp-view", "DistributedView.of_transpiler(t, title='MLP with Adam: trainer 0 and two servers')"),
        ("md", """\
## A sparse embedding

`embedding(is_sparse=True)` gives a `SelectedRows` gradient: only the rows of the words in the
batch. The trainer cuts it by row ranges with `split_selected_rows`, and reads the table from
the servers (`distributed_lookup_table`) instead of keeping a copy: its startup only makes a
placeholder (`fake_init`) of the table's shape."""),
        ("code", "sparse", """\
def sparse_embedding():
    words = fluid.data(name='words', shape=[-1, 1], dtype='int64')
    label = fluid.layers.data(name='label', shape=[1], dtype='float32')
    emb = fluid.embedding(words, size=[10000, 16], is_sparse=True)
    pred = fluid.layers.fc(input=emb, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=label))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)

t, startup = transpiled(sparse_embedding)
trainer = t.get_trainer_program(wait_port=False)
print('the gradient is', trainer.global_block().var('embedding_0.w_0@GRAD').type.name)
rpc_ops(trainer)
print('trainer startup makes the table with',
      [op.type for op in startup.global_block().ops if 'embedding_0.w_0' in op.output_arg_names])
serve = t.get_pserver_program('127.0.0.1:6170').global_block().ops[0]
print('sparse_grad_to_param:', serve.attr('sparse_grad_to_param'))"""),
        ("md", """\
## They are ordinary programs

Every program the transpiler makes passes `fluid.verify` and survives the trip through
Paddle's `ProgramDesc` bytes unchanged, so a server program can be saved on one machine and
loaded on another."""),
        ("code", "save", """\
t, startup = transpiled(mlp)
programs = {'trainer': t.get_trainer_program(wait_port=False), 'trainer startup': startup}
for ep in t.pserver_endpoints:
    programs[f'server {ep}'], programs[f'server {ep} startup'] = t.get_pserver_programs(ep)
for name, program in programs.items():
    fluid.verify(program)
    data = program.desc.serialize_to_string()
    again = fluid.Program.parse_from_string(data)
    print(f'{name:28s} {len(data):6d} bytes, {again.num_blocks} blocks, '
          f'same bytes again: {again.desc.serialize_to_string() == data}')"""),
    ]


def training_cells():
    """The run-time half: a job of 2 servers and 2 trainers on this machine (through
    ``fluid_nb.distributed.launcher``), its losses next to single-process training."""
    return [
        ("md", """\
## Training with two servers and two trainers

The same transpiled programs, run for real: the script below plays every role. Started as a
server it runs its startup program and serves (`exe.run(pserver_program)` returns once every
trainer has said it is done); as a trainer it fetches the servers' initial parameters, trains
on its half of every batch and reports its losses. `fluid_nb.distributed.launcher` starts two
servers and two trainers on free local ports with the environment Fluid's launchers set
(`PADDLE_TRAINING_ROLE`, `PADDLE_PSERVERS_IP_PORT_LIST`, ...); the gradients travel over gRPC.

In synchronous mode the servers average the two trainers' gradients, so training on half
batches on two trainers takes the same steps as one process training on the whole batches:
the mean of the trainers' losses follows the single-process loss."""),
        ("code", "job-script", """\
import json, os, tempfile

JOB = tempfile.mkdtemp(prefix='fluid_nb_job_')
SCRIPT = os.path.join(JOB, 'fit_a_line_job.py')
STEPS, BATCH = 20, 32

def fit_a_line_fixed():
    \"\"\"fit_a_line with fixed initial values, so every run starts from the same point.\"\"\"
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    pred = fluid.layers.fc(input=x, size=1,
                           param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return loss

def batches(steps=STEPS, batch=BATCH):
    rng = np.random.RandomState(0)
    w = rng.uniform(-1, 1, (13, 1)).astype('float32')
    for _ in range(steps):
        x = rng.normal(size=(batch, 13)).astype('float32')
        yield x, x @ w + 0.5 + 0.1 * rng.normal(size=(batch, 1)).astype('float32')

with open(SCRIPT, 'w') as f:
    f.write(f'''import json, os, sys
import numpy as np
import fluid_nb as fluid
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else {STEPS}  # after the job's folder
BATCH = {BATCH}
''')
    import inspect
    f.write(inspect.getsource(fit_a_line_fixed) + inspect.getsource(batches))
    f.write('''
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    loss = fit_a_line_fixed()
trainers = int(os.environ['PADDLE_TRAINERS_NUM'])
trainer_id = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
t = fluid.DistributeTranspiler()
t.transpile(trainer_id, program=main, startup_program=startup, trainers=trainers,
            pservers=os.environ['PADDLE_PSERVERS_IP_PORT_LIST'])
exe = fluid.Executor(fluid.CPUPlace())
if os.environ['PADDLE_TRAINING_ROLE'] == 'PSERVER':
    server, server_startup = t.get_pserver_programs(os.environ['PADDLE_CURRENT_ENDPOINT'])
    exe.run(server_startup)
    exe.run(server)
else:
    trainer = t.get_trainer_program()
    exe.run(startup)
    losses = []
    for x, y in batches():
        half = slice(trainer_id * BATCH // trainers, (trainer_id + 1) * BATCH // trainers)
        value, = exe.run(trainer, feed={'x': x[half], 'y': y[half]}, fetch_list=[loss])
        losses.append(float(value))
    exe.close()
    with open(os.path.join(sys.argv[1], f'trainer{trainer_id}.json'), 'w') as out:
        json.dump(losses, out)
''')
print('wrote', os.path.basename(SCRIPT))"""),
        ("code", "train", """\
import io
from fluid_nb.distributed import launcher as launch

processes, _ = launch.plan(pservers=2, trainers=2)
log = io.StringIO()
status = launch.run(processes, SCRIPT, [JOB], out=log)
print('job exit status:', status)
print('processes:', ', '.join(f'{p.label} {p.endpoint}' for p in processes))
trainer_losses = [json.load(open(os.path.join(JOB, f'trainer{i}.json'))) for i in range(2)]
print('trainer 0 first losses:', [round(v, 4) for v in trainer_losses[0][:4]])
print('trainer 1 first losses:', [round(v, 4) for v in trainer_losses[1][:4]])"""),
        ("code", "compare", """\
from IPython.display import SVG

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    loss = fit_a_line_fixed()
exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
exe.run(startup, scope=scope)
single = [float(exe.run(main, feed={'x': x, 'y': y}, fetch_list=[loss], scope=scope)[0])
          for x, y in batches()]
job = np.mean(trainer_losses, axis=0)
print('single-process first losses:', [round(v, 4) for v in single[:4]])
print('largest difference, job mean vs single process:', float(np.max(np.abs(job - single))))

def curves(series, width=480, height=160, pad=8):
    top = max(max(values) for values, _ in series)
    lines = []
    for values, colour in series:
        points = ' '.join(f'{pad + i * (width - 2 * pad) / (len(values) - 1):.1f},'
                          f'{height - pad - v / top * (height - 2 * pad):.1f}'
                          for i, v in enumerate(values))
        lines.append(f"<polyline fill='none' stroke='{colour}' stroke-width='2' points='{points}'/>")
    legend = ("<text x='200' y='16' font-size='11' fill='#1f6feb'>single process</text>"
              "<text x='300' y='16' font-size='11' fill='#d97706'>2 servers, 2 trainers</text>")
    return SVG(f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
               f"style='background:#fff'>{''.join(lines)}{legend}</svg>")

curves([(single, '#1f6feb'), (list(job), '#d97706')])"""),
    ]


def live_job_cells():
    """The same job placed by Ray on a local cluster and watched while it trains."""
    return [
        ("md", """\
## Watching a job train, on a Ray cluster

`fluid.distributed.launch` starts the same four processes from Python. With `ray=...` Ray
places them on a cluster's nodes (`"local"`: a cluster of this machine alone, started for the
job; an address: a real cluster), and with `wait=False` it returns at once with the running
**job**: `job.status()` gives each process's node, state, steps, last loss and the bytes it
exchanged with each peer. Every process reports these itself: the launcher gives it a status
file (`FLUID_NB_STATUS_FILE`), which its executor and its RPC calls keep current.

`DistributedView.of_job(job)` shows those rows and follows the job from a thread of the
kernel, twice a second, until every process has ended: run the cell and watch the steps
count up. (Without Ray installed, the cell starts the job on this machine instead.)"""),
        ("code", "ray-job", """\
import importlib.util

RAY = 'local' if importlib.util.find_spec('ray') else None
# a local cluster takes token authentication, Ray's default for one, said here so that Ray
# does not warn about having chosen it
os.environ.setdefault('RAY_AUTH_MODE', 'token')
job = fluid.distributed.launch(SCRIPT, [JOB, '200'], pservers=2, trainers=2, ray=RAY,
                               wait=False, out=io.StringIO())
print('placed by', 'a local Ray cluster' if RAY else 'this machine')
view = DistributedView.of_job(job, title='fit_a_line, 2 servers and 2 trainers')
view"""),
        ("md", """\
`job.wait()` blocks until the job ends and returns the trainers' exit statuses (a process
that fails stops the job and raises `JobFailed`, naming it and its node). The view keeps its
last rows: every trainer ran its 200 steps, and each server served 200 rounds."""),
        ("code", "ray-wait", """\
print('trainer exit statuses:', job.wait(timeout=300))
for row in view.refresh_job()['processes']:
    sent = sum(row['bytes_sent'].values())
    print(f"{row['label']:10s} {row['state']:9s} steps {row['steps']:4d} "
          f"sent {sent:7d} bytes to {len(row['bytes_sent'])} peers, "
          f"last loss {row['last_loss']}")"""),
    ]


CELLS = transpiler_cells() + training_cells() + live_job_cells()


def text():
    """The notebook file's text."""
    return make_notebooks.text_of(make_notebooks.build(CELLS))


def main(argv=None):
    return make_notebooks.write_or_check(NAME, CELLS, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
