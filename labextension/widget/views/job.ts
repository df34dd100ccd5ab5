/**
 * The job panel: a running parameter-server job's processes, one row each (node, state,
 * steps, last loss, bytes to and from each peer, restarts), redrawn whenever the kernel
 * sends a new `fluid_nb.viz.distributed_model.job_model`.
 */
import { bytesText, ensureStyle, h, numberText, table } from './dom';

/** One process of the job (the fields the panel reads). */
export interface IJobProcess {
  label: string;
  role: string;
  index: number;
  node: string | null;
  endpoint: string;
  state: string;
  exit_code: number | null;
  steps: number;
  last_loss: number | string | null;
  bytes_sent: { [peer: string]: number };
  bytes_received: { [peer: string]: number };
  restarts: number;
}

/** The job model. */
export interface IJobModel {
  format: 'fluid-nb.job';
  title: string;
  processes: IJobProcess[];
  servers: string[];
  done: boolean;
  error?: string;
  stats: { processes: number; running: number; steps: number; bytes: number };
}

/** Bytes per peer, one line each. */
function perPeer(counts: { [peer: string]: number }): HTMLElement {
  const box = h('div', 'fluid-nb-job-peers');
  for (const peer of Object.keys(counts).sort()) {
    box.appendChild(h('div', '', `${peer}: ${bytesText(counts[peer])}`));
  }
  return box;
}

/** A cell's content tagged with the field it shows (tests and styles find it by that). */
function field(name: string, content: string | HTMLElement): HTMLElement {
  const span = h('span', `fluid-nb-job-${name}`);
  span.dataset.field = name;
  if (typeof content === 'string') {
    span.textContent = content;
  } else {
    span.appendChild(content);
  }
  return span;
}

/** Draw `model` into `el` (replacing what was there). */
export function renderJob(el: HTMLElement, model: IJobModel): void {
  ensureStyle();
  const root = h('div', 'fluid-nb-view fluid-nb-job');
  const stats = model.stats;
  root.appendChild(h('div', 'fluid-nb-head',
    `${model.title}: ${stats.processes} process(es), ${stats.running} running, ` +
    `${stats.steps} trainer step(s), ${bytesText(stats.bytes)} exchanged` + (model.done ? ' (done)' : '')));
  const rows = model.processes.map(p => [
    field('label', p.label),
    field('node', p.node ?? ''),
    field('state', p.exit_code === null ? p.state : `${p.state} (${p.exit_code})`),
    field('steps', String(p.steps)),
    field('loss', p.last_loss === null ? '' : numberText(p.last_loss)),
    field('sent', perPeer(p.bytes_sent)),
    field('received', perPeer(p.bytes_received)),
    field('restarts', String(p.restarts))
  ]);
  const grid = table(['process', 'node', 'state', 'steps', 'last loss', 'sent', 'received', 'restarts'], rows);
  model.processes.forEach((p, k) => {
    const row = grid.tBodies[0].rows[k];
    row.dataset.process = p.label;
    row.dataset.state = p.state;
  });
  root.appendChild(grid);
  if (model.error) {
    root.appendChild(h('div', 'fluid-nb-error', `no longer followed: ${model.error}`));
  }
  root.dataset.done = String(model.done);
  el.replaceChildren(root);
}
