/**
 * Memory figures on the program graph: the bytes each op allocated in a recorded run as a
 * fill on a sequential, logarithmic scale (pale amber for the least, red-orange for the
 * most; an op that allocated nothing keeps its colour by role), the legend, and the text the
 * details panel and the Python listing share (`fluid_nb.viz.program_model.memory_text`).
 */
import { el } from './dom';
import { IMemoryFigures, IOpMemory } from './model';

/** The scale's colours, least to most bytes: light enough that black labels stay readable. */
export const MEMORY_STOPS = ['#fde68a', '#fb923c', '#e5484d'];

/** `64.0 KiB` style byte counts (binary units, as `fluid_nb.viz.memory_model.bytes_text`). */
export function bytesText(size: number): string {
  const units: [string, number][] = [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]];
  for (const [unit, scale] of units) {
    if (size >= scale) {
      return `${(size / scale).toFixed(1)} ${unit}`;
    }
  }
  return `${size} B`;
}

function rgb(hex: string): number[] {
  return [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
}

function hex(channels: number[]): string {
  return '#' + channels.map(c => Math.round(c).toString(16).padStart(2, '0')).join('');
}

/** Where `bytes` lies between `min` and `max` on a log scale, 0..1 (1 when they are equal). */
export function memoryPosition(bytes: number, min: number, max: number): number {
  if (!(max > min) || min <= 0) {
    return 1;
  }
  const t = (Math.log(Math.max(bytes, min)) - Math.log(min)) / (Math.log(max) - Math.log(min));
  return Math.min(1, Math.max(0, t));
}

/** The fill of an op that allocated `bytes`, on the log scale from `min` to `max`. */
export function memoryFill(bytes: number, min: number, max: number): string {
  const t = memoryPosition(bytes, min, max) * (MEMORY_STOPS.length - 1);
  const at = Math.min(Math.floor(t), MEMORY_STOPS.length - 2);
  const [a, b] = [rgb(MEMORY_STOPS[at]), rgb(MEMORY_STOPS[at + 1])];
  const f = t - at;
  return hex(a.map((c, i) => c + (b[i] - c) * f));
}

/** The parts of an op's memory line: the head and the names after it (`memoryText` joins
 * them; the details panel makes the variable names links). */
export function memoryParts(figure: IOpMemory | undefined | null): { head: string; names: string[]; extra: string[] } {
  if (!figure) {
    return { head: 'allocates nothing', names: [], extra: [] };
  }
  const blocks = figure.blocks;
  const head = `allocates ${bytesText(figure.bytes)} in ${blocks} block${blocks !== 1 ? 's' : ''}`;
  const extra: string[] = [];
  const more = figure.vars_count - figure.vars.length;
  if (more > 0) {
    extra.push(`… ${more} more`);
  }
  if (figure.unnamed) {
    extra.push(`${figure.unnamed} unnamed`);
  }
  return { head, names: [...figure.vars], extra };
}

/** `allocates 1.0 MiB in 3 blocks: fc_0.tmp_0, …`: the same text as Python's `memory_text`. */
export function memoryText(figure: IOpMemory | undefined | null): string {
  const { head, names, extra } = memoryParts(figure);
  const all = [...names, ...extra];
  return head + (all.length ? ': ' + all.join(', ') : '');
}

/** The legend: the scale from the least to the most bytes an op allocated, and the totals. */
export function memoryLegend(figures: IMemoryFigures): HTMLElement {
  const root = el('div', 'fluid-nb-memory-legend');
  const count = Object.keys(figures.ops).length;
  root.appendChild(el('span', 'fluid-nb-memory-legend-title', 'Bytes allocated per op'));
  if (!count) {
    root.appendChild(el('span', 'fluid-nb-memory-legend-note', 'no op allocated anything'));
    return root;
  }
  root.appendChild(el('span', 'fluid-nb-memory-legend-min', bytesText(figures.min)));
  const bar = el('span', 'fluid-nb-memory-legend-bar');
  bar.style.background = `linear-gradient(to right, ${MEMORY_STOPS.join(', ')})`;
  bar.title = 'log scale';
  root.appendChild(bar);
  root.appendChild(el('span', 'fluid-nb-memory-legend-max', bytesText(figures.max)));
  let note = `log scale · ${count} ops, ${bytesText(figures.total)} in ${figures.blocks} blocks`;
  if (figures.outside?.blocks) {
    note += ` · outside ops ${bytesText(figures.outside.bytes)}`;
  }
  if (figures.unmatched?.blocks) {
    note += ` · ${bytesText(figures.unmatched.bytes)} by ops not in this program`;
  }
  root.appendChild(el('span', 'fluid-nb-memory-legend-note', note));
  return root;
}
