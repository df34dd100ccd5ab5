/**
 * The memory view: the host arena's chunks as bars of blocks coloured by the variable each
 * holds (free space light), the used bytes op by op over a recorded run as a line with its
 * peak marked (hover an op for its bytes and the variables alive then), a legend with an
 * entry per colour the bars use, and the variables' table. The arena's peak since it started
 * and the recorded run's peak are two figures, each shown with the words that say which. It draws `fluid_nb.viz.memory_model.memory_model`'s model (`format: "fluid-nb.memory"`).
 */
import { ensureStyle, h, table } from './dom';

/** One block of a chunk. */
export interface IMemoryBlock {
  offset: number;
  size: number;
  state: string; // "free", "used" (no variable of the scope) or a variable name
}

/** One chunk: `shown` bytes of it are drawn, `beyond` free bytes past them are not. */
export interface IMemoryChunk {
  index: number;
  size: number;
  shown: number;
  used: number;
  free: number;
  beyond: number;
  blocks: IMemoryBlock[];
}

/** One op of the timeline. */
export interface IMemoryPoint {
  label: string;
  op: [string, number, number] | null;
  used: number;
  high: number;
  events: number;
  alive: [string, number][];
  alive_count: number;
  alive_bytes: number;
}

/** The used bytes over a recorded run. */
export interface IMemoryTimeline {
  start: number;
  end: number;
  events: number;
  truncated: boolean;
  peak: { index: number; used: number; label: string };
  points: IMemoryPoint[];
}

/** One variable. */
export interface IMemoryVariable {
  name: string;
  bytes: number;
  block: number;
  op: string | null;
  allocs: number;
  alive: boolean;
  in_scope: boolean;
}

/** One colour of the block map: free space, blocks no variable holds, or a variable. */
export interface IMemoryLegendEntry {
  state: string;
  label: string;
  colour: string;
  bytes: number;
  blocks: number;
}

/** A peak with the words it is shown with (`arena peak since start …`, `run peak … during …`). */
export interface IMemoryPeak {
  bytes: number;
  text: string;
  op?: string;
}

/** The memory model. */
export interface IMemoryModel {
  format: 'fluid-nb.memory';
  title: string;
  stats: { [key: string]: number };
  map: { chunk_size: number; chunks: IMemoryChunk[]; huge: { size: number; state: string }[] };
  timeline: IMemoryTimeline | null;
  variables: IMemoryVariable[];
  colours: { [name: string]: string };
  legend?: IMemoryLegendEntry[]; // absent in models saved before it existed
  peaks?: { arena: IMemoryPeak; run: IMemoryPeak | null };
}

const SVG = 'http://www.w3.org/2000/svg';
const FREE = '#eef1f4';
const UNNAMED = '#9aa4ad';
const MAX_ROWS = 40;

/** `64.0 KiB` style byte counts (binary units, as the Python side writes them). */
function bytes(size: number): string {
  const units: [string, number][] = [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]];
  for (const [unit, scale] of units) {
    if (size >= scale) {
      return `${(size / scale).toFixed(1)} ${unit}`;
    }
  }
  return `${size} B`;
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: { [k: string]: string | number }, parent?: Element): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    node.setAttribute(key, String(value));
  }
  parent?.appendChild(node);
  return node;
}

function colour(model: IMemoryModel, state: string): string {
  if (state === 'free') {
    return FREE;
  }
  return state === 'used' ? UNNAMED : model.colours[state] ?? UNNAMED;
}

/** The peaks' words; a model saved before they were part of it gets the same words here. */
function peakTexts(model: IMemoryModel): { arena: string; run: string | null } {
  if (model.peaks) {
    return { arena: model.peaks.arena.text, run: model.peaks.run?.text ?? null };
  }
  const peak = model.timeline?.peak;
  return {
    arena: `arena peak since start ${bytes(model.stats.peak)}`,
    run: peak ? `run peak ${bytes(peak.used)} during ${peak.label}` : null
  };
}

/** The legend: a swatch per colour the bars use, with what it means and its bytes. */
function legendBox(model: IMemoryModel): HTMLElement {
  const box = h('div', 'fluid-nb-memory-legend');
  let entries = model.legend;
  if (!entries) {
    const states = new Set<string>(model.map.chunks.length ? ['free'] : []);
    model.map.chunks.forEach(c => c.blocks.forEach(b => states.add(b.state)));
    model.map.huge.forEach(b => states.add(b.state));
    entries = [...states].map(state => ({ state, label: state, colour: colour(model, state), bytes: 0, blocks: 0 }));
  }
  for (const entry of entries) {
    const item = h('span', 'fluid-nb-memory-legend-item');
    item.dataset.state = entry.state;
    item.dataset.colour = entry.colour;
    const swatch = h('span', 'fluid-nb-memory-swatch');
    swatch.style.background = entry.colour;
    item.append(swatch, entry.bytes ? `${entry.label} ${bytes(entry.bytes)}` : entry.label);
    item.title = `${entry.label}: ${bytes(entry.bytes)} in ${entry.blocks} block(s)`;
    box.appendChild(item);
  }
  return box;
}

/** A chunk as a bar: one rect per block, its width its share of the part shown. */
function chunkBar(model: IMemoryModel, chunk: IMemoryChunk): HTMLElement {
  const box = h('div', 'fluid-nb-memory-chunk-box');
  box.appendChild(h('div', 'fluid-nb-memory-caption',
    `chunk ${chunk.index}: ${bytes(chunk.used)} used in ${chunk.blocks.filter(b => b.state !== 'free').length} blocks; ` +
    `first ${bytes(chunk.shown)} of ${bytes(chunk.size)} shown` + (chunk.beyond ? ` (${bytes(chunk.beyond)} free beyond)` : '')));
  const width = 1000;
  const bar = svg('svg', { class: 'fluid-nb-memory-chunk', viewBox: `0 0 ${width} 24`, preserveAspectRatio: 'none' });
  bar.dataset.chunk = String(chunk.index);
  svg('rect', { x: 0, y: 0, width, height: 24, fill: FREE }, bar);
  for (const block of chunk.blocks) {
    const rect = svg('rect', {
      class: 'fluid-nb-memory-block', x: (width * block.offset) / chunk.shown, y: 0,
      width: Math.max((width * block.size) / chunk.shown, 0.6), height: 24,
      fill: colour(model, block.state), stroke: block.state === 'free' ? '#d5dbe1' : '#fff', 'stroke-width': 0.5,
      'vector-effect': 'non-scaling-stroke'
    }, bar);
    rect.dataset.state = block.state;
    svg('title', {}, rect).textContent = `${block.state}: ${bytes(block.size)} at offset ${block.offset}`;
  }
  box.appendChild(bar);
  return box;
}

/** The timeline: used bytes after each op (and the most during it), the peak as a red dot;
 * hovering a column shows the op, its bytes and the variables alive after it. */
function timelineChart(model: IMemoryModel, line: IMemoryTimeline): HTMLElement {
  const box = h('div', 'fluid-nb-memory-timeline-box');
  const peak = line.peak;
  const runText = peakTexts(model).run ?? '';
  box.appendChild(h('div', 'fluid-nb-memory-caption',
    `used bytes over ${line.points.length} ops (${line.events} events): ${bytes(line.start)} before, ` +
    `${bytes(line.end)} after, ${runText}` + (line.truncated ? ' (neighbouring ops joined)' : '')));
  const W = 720, H = 170, left = 64, right = 12, top = 18, bottom = 22;
  const chart = svg('svg', { class: 'fluid-nb-memory-timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const points = line.points;
  const low = Math.min(line.start, ...points.map(p => p.used));
  const high = Math.max(...points.map(p => p.high));
  const span = Math.max(high - low, 1);
  const step = (W - left - right) / points.length;
  const x = (k: number) => left + step * (k + 1);
  const y = (value: number) => H - bottom - ((H - top - bottom) * (value - low)) / span;
  svg('line', { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, stroke: '#bbb' }, chart);
  svg('line', { x1: left, y1: top, x2: left, y2: H - bottom, stroke: '#bbb' }, chart);
  for (const [value, anchorY] of [[low, y(low)], [high, y(high)]] as [number, number][]) {
    const tick = svg('text', { x: left - 4, y: anchorY + 4, 'text-anchor': 'end', class: 'fluid-nb-memory-axis' }, chart);
    tick.textContent = bytes(value);
  }
  // one column per op under the line, for hovering (the handler is set once `show` exists)
  const columns = points.map((_, k) => {
    const column = svg('rect', {
      x: x(k) - step / 2, y: top, width: Math.max(step, 1), height: H - top - bottom,
      fill: 'transparent', class: 'fluid-nb-memory-column'
    }, chart);
    column.dataset.index = String(k);
    return column;
  });
  const coords = [`${x(-1)},${y(line.start)}`];
  // a staircase: the bytes stay level between ops and change at each op (up to the most
  // during it, then to what it left)
  let before = line.start;
  points.forEach((p, k) => {
    coords.push(`${x(k)},${y(before)}`, `${x(k)},${y(p.high)}`, `${x(k)},${y(p.used)}`);
    before = p.used;
  });
  svg('polyline', { points: coords.join(' '), fill: 'none', stroke: '#1976d2', 'stroke-width': 1.5, class: 'fluid-nb-memory-line', 'pointer-events': 'none' }, chart);
  const guide = svg('line', { y1: top, y2: H - bottom, stroke: '#888', 'stroke-dasharray': '3 3', visibility: 'hidden', 'pointer-events': 'none' }, chart);
  const px = x(peak.index), py = y(peak.used);
  const dot = svg('circle', { cx: px, cy: py, r: 4.5, fill: '#d32f2f', class: 'fluid-nb-memory-peak' }, chart);
  svg('title', {}, dot).textContent = runText;
  const label = svg('text', {
    x: px + (px > W / 2 ? -7 : 7), y: Math.max(py - 6, 12), fill: '#d32f2f',
    'text-anchor': px > W / 2 ? 'end' : 'start', class: 'fluid-nb-memory-peak-label', 'pointer-events': 'none'
  }, chart);
  label.textContent = runText;
  const first = svg('text', { x: left, y: H - 6, class: 'fluid-nb-memory-axis' }, chart);
  first.textContent = points[0].label;
  const last = svg('text', { x: W - right, y: H - 6, 'text-anchor': 'end', class: 'fluid-nb-memory-axis' }, chart);
  last.textContent = points[points.length - 1].label;

  const hover = h('div', 'fluid-nb-memory-hover');
  const show = (k: number) => {
    const p = points[k];
    guide.setAttribute('x1', String(x(k)));
    guide.setAttribute('x2', String(x(k)));
    guide.setAttribute('visibility', 'visible');
    hover.replaceChildren(
      h('div', 'fluid-nb-memory-hover-op', `${k + 1}. ${p.label}: ${bytes(p.used)} after, ${bytes(p.high)} at most`),
      h('div', '', `alive: ${p.alive_count} named variable(s), ${bytes(p.alive_bytes)}` + (p.alive_count ? ':' : ''))
    );
    const list = h('div', 'fluid-nb-memory-alive');
    for (const [name, size] of p.alive) {
      const item = h('span', 'fluid-nb-memory-alive-var');
      const swatch = h('span', 'fluid-nb-memory-swatch');
      swatch.style.background = colour(model, name);
      item.append(swatch, `${name} ${bytes(size)}`);
      list.appendChild(item);
    }
    if (p.alive_count > p.alive.length) {
      list.appendChild(h('span', 'fluid-nb-note', `… ${p.alive_count - p.alive.length} more`));
    }
    hover.appendChild(list);
  };
  columns.forEach((column, k) => column.addEventListener('mouseenter', () => show(k)));
  dot.addEventListener('mouseenter', () => show(peak.index));
  chart.addEventListener('mouseleave', () => guide.setAttribute('visibility', 'hidden'));
  box.append(chart, hover);
  show(peak.index); // the peak's op until the pointer points elsewhere
  return box;
}

function variablesTable(model: IMemoryModel): HTMLElement {
  const rows = model.variables.slice(0, MAX_ROWS).map(v => {
    const name = h('span', 'fluid-nb-memory-var');
    const swatch = h('span', 'fluid-nb-memory-swatch');
    swatch.style.background = colour(model, v.name);
    name.append(swatch, h('code', '', v.name));
    return [name, String(v.bytes), bytes(v.block), v.op ?? h('span', 'fluid-nb-note', 'earlier'), v.alive ? 'yes' : '', v.in_scope ? 'yes' : ''];
  });
  const box = h('div', 'fluid-nb-memory-table-box');
  box.appendChild(table(['variable', 'bytes', 'block', 'allocated by', 'alive after', 'in arena now'], rows, 'fluid-nb-memory-vars'));
  if (model.variables.length > MAX_ROWS) {
    box.appendChild(h('div', 'fluid-nb-note', `… ${model.variables.length - MAX_ROWS} more variables`));
  }
  return box;
}

const CSS = `
.fluid-nb-memory-caption { margin: 6px 0 2px; color: var(--jp-ui-font-color1, #222); }
.fluid-nb-memory-chunk { display: block; width: 100%; max-width: 960px; height: 24px;
  border: 1px solid var(--jp-border-color1, #999); box-sizing: border-box; }
.fluid-nb-memory-timeline { display: block; background: var(--jp-layout-color0, #fff);
  border: 1px solid var(--jp-border-color2, #ddd); }
.fluid-nb-memory-axis { font-size: 10px; fill: var(--jp-ui-font-color2, #666); }
.fluid-nb-memory-peak-label { font-size: 11px; font-weight: 600; }
.fluid-nb-memory-hover { min-height: 3.2em; max-width: 720px; margin: 2px 0 4px; padding: 3px 6px;
  background: var(--jp-layout-color2, #f3f3f3); border-radius: 3px; }
.fluid-nb-memory-hover-op { font-weight: 600; }
.fluid-nb-memory-table-box { max-height: 360px; overflow-y: auto; max-width: 960px; }
.fluid-nb-memory-alive { display: flex; flex-wrap: wrap; gap: 2px 10px; }
.fluid-nb-memory-legend { display: flex; flex-wrap: wrap; gap: 2px 12px; max-width: 960px; margin: 2px 0 6px;
  font-size: 11px; color: var(--jp-ui-font-color1, #222); }
.fluid-nb-memory-legend-item { white-space: nowrap; }
.fluid-nb-memory-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px;
  border: 1px solid rgba(0,0,0,0.25); vertical-align: middle; }
`;

function ensureMemoryStyle(): void {
  if (!document.getElementById('fluid-nb-memory-style')) {
    const style = document.createElement('style');
    style.id = 'fluid-nb-memory-style';
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}

/** Draw `model` into `el` (replacing what was there). */
export function renderMemory(el: HTMLElement, model: IMemoryModel): void {
  ensureStyle();
  ensureMemoryStyle();
  el.replaceChildren();
  const root = h('div', 'fluid-nb-view fluid-nb-memory-view');
  const s = model.stats;
  const said = peakTexts(model);
  const head = h('div', 'fluid-nb-head',
    `${model.title}: ${bytes(s.used)} used now in ${s.used_blocks} blocks; ${said.arena}` +
    (said.run ? `; ${said.run}` : '') + `; ${s.chunks} chunk(s) of ${bytes(s.chunk_size)}, largest free block ${bytes(s.largest_free)}, ` +
    `fragmentation ${s.fragmentation.toFixed(2)}`);
  head.title = 'arena peak: the most bytes the arena held since it was made (or fluid.memory.reset_peak), ' +
    'earlier runs included; run peak: the most during the recorded run';
  root.appendChild(head);
  for (const chunk of model.map.chunks) {
    root.appendChild(chunkBar(model, chunk));
  }
  for (const block of model.map.huge) {
    const caption = h('div', 'fluid-nb-memory-caption');
    const swatch = h('span', 'fluid-nb-memory-swatch');
    swatch.style.background = colour(model, block.state);
    caption.append(swatch, `huge block (from the system): ${block.state}, ${bytes(block.size)}`);
    root.appendChild(caption);
  }
  if (model.map.chunks.length || model.map.huge.length) {
    root.appendChild(legendBox(model));
  }
  if (model.timeline && model.timeline.points.length) {
    root.appendChild(timelineChart(model, model.timeline));
  } else {
    root.appendChild(h('div', 'fluid-nb-note', 'no run recorded yet (with view.recording(): exe.run(...))'));
  }
  if (model.variables.length) {
    root.appendChild(variablesTable(model));
  }
  el.appendChild(root);
}
