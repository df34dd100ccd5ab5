/**
 * The LoD tensor view: every LoD level's offsets and lengths side by side, then the rows as
 * nested boxes (one box per sequence at each level), coloured by top-level sequence.
 * It draws the model `fluid_nb.viz.lod_model.lod_model` writes (`format: "fluid-nb.lod"`).
 */
import { bytesText, ensureStyle, h, numberText, sequenceColour, shapeText, table } from './dom';

/** One sequence node of the nested tree. */
export interface ILodNode {
  level: number;
  index: number;
  start: number;
  end: number;
  length: number;
  empty: boolean;
  rows: [number, number];
  children: ILodNode[];
}

/** One shown data row. */
export interface ILodRow {
  row: number;
  sequence: number | null;
  path: number[];
  values: unknown[];
}

/** The LoD tensor model (fields the view reads). */
export interface ILodModel {
  format: 'fluid-nb.lod';
  name: string | null;
  initialized: boolean;
  shape: number[];
  dtype: string | null;
  place: string | null;
  bytes: number;
  rows: number;
  levels: { level: number; count: number; offsets: number[]; lengths: number[]; empty: number[]; truncated: boolean }[];
  sequences: ILodNode[];
  sequences_truncated: boolean;
  data: { rows: ILodRow[]; shown: number; total: number; truncated: boolean; values_truncated: boolean };
}

function rowBox(row: ILodRow, valuesTruncated: boolean): HTMLElement {
  const box = h('span', 'fluid-nb-row');
  box.dataset.row = String(row.row);
  box.appendChild(h('span', 'fluid-nb-row-index', String(row.row)));
  const values = row.values.map(numberText).join(' ');
  box.appendChild(document.createTextNode(values + (valuesTruncated ? ' …' : '')));
  if (row.sequence !== null) {
    box.style.background = sequenceColour(row.sequence, 0.35);
  }
  return box;
}

function rowsIn(rows: Map<number, ILodRow>, range: [number, number], valuesTruncated: boolean): HTMLElement {
  const strip = h('div', 'fluid-nb-rows');
  for (let r = range[0]; r < range[1]; r++) {
    const row = rows.get(r);
    if (row) {
      strip.appendChild(rowBox(row, valuesTruncated));
    }
  }
  if (range[1] > range[0] && !rows.has(range[1] - 1)) {
    strip.appendChild(h('span', 'fluid-nb-note', `rows up to ${range[1] - 1} not shown`));
  }
  return strip;
}

function sequenceBox(node: ILodNode, top: number, rows: Map<number, ILodRow>, valuesTruncated: boolean): HTMLElement {
  const box = h('div', 'fluid-nb-seq' + (node.empty ? ' fluid-nb-seq-empty' : ''));
  box.dataset.level = String(node.level);
  box.dataset.sequence = String(top);
  box.style.background = sequenceColour(top, 0.08 + 0.06 * node.level);
  box.style.borderColor = sequenceColour(top, 0.9);
  const [first, end] = node.rows;
  const where = end - first === 1 ? ` · row ${first}` : ` · rows ${first}–${end - 1}`;
  const label = `level ${node.level} · sequence ${node.index} · length ${node.length}` +
    (node.empty ? ' (empty)' : where);
  box.appendChild(h('div', 'fluid-nb-seq-label', label));
  if (node.children.length) {
    for (const child of node.children) {
      box.appendChild(sequenceBox(child, top, rows, valuesTruncated));
    }
  } else if (!node.empty) {
    box.appendChild(rowsIn(rows, node.rows, valuesTruncated));
  }
  return box;
}

/** Draw `model` into `el` (replacing what was there). */
export function renderTensor(el: HTMLElement, model: ILodModel): void {
  ensureStyle();
  el.replaceChildren();
  const root = h('div', 'fluid-nb-view fluid-nb-tensor');
  el.appendChild(root);
  const title = `${model.name ? model.name + ': ' : ''}LoDTensor ${shapeText(model.shape)} ${model.dtype ?? ''}`;
  root.appendChild(h('div', 'fluid-nb-head', title));
  if (!model.initialized) {
    root.appendChild(h('div', 'fluid-nb-note', 'not initialised'));
    return;
  }
  root.appendChild(h('div', 'fluid-nb-note', `${model.place ?? ''} · ${bytesText(model.bytes)} · ${model.levels.length} LoD level(s)`));
  if (model.levels.length) {
    const anyEmpty = model.levels.some(level => level.empty.length > 0);
    const rows = model.levels.map(level => {
      const cells: (string | Node)[] = [
        `level ${level.level}`,
        h('code', '', `[${level.offsets.join(', ')}]${level.truncated ? ' …' : ''}`),
        h('code', '', `[${level.lengths.join(', ')}]${level.truncated ? ' …' : ''}`)
      ];
      if (anyEmpty) {
        cells.push(level.empty.length ? level.empty.join(', ') : '');
      }
      return cells;
    });
    const head = ['LoD', 'offsets', 'lengths'].concat(anyEmpty ? ['empty sequences'] : []);
    root.appendChild(table(head, rows, 'fluid-nb-lod-table'));
  }
  const byRow = new Map(model.data.rows.map(r => [r.row, r] as [number, ILodRow]));
  const valuesTruncated = model.data.values_truncated;
  if (model.sequences.length) {
    const boxes = h('div', 'fluid-nb-seqs');
    for (const node of model.sequences) {
      boxes.appendChild(sequenceBox(node, node.index, byRow, valuesTruncated));
    }
    root.appendChild(boxes);
  } else {
    root.appendChild(rowsIn(byRow, [0, model.rows], valuesTruncated));
  }
  if (model.data.truncated || model.sequences_truncated) {
    root.appendChild(h('div', 'fluid-nb-note', `showing ${model.data.shown} of ${model.data.total} rows`));
  }
}
