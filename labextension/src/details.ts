/**
 * The details panel: what one op or variable is, built with DOM calls only (model text is
 * never parsed as HTML).
 */
import { el, shapeText } from './dom';
import { bytesText, memoryFill, memoryParts } from './memory';
import { IEdge, IMemoryFigures, IOp, IProgramModel, IVar } from './model';

/** The name Paddle writes in a slot that holds no variable. */
const EMPTY_VAR_NAME = '@EMPTY@';

/** Lookups over one model revision. */
export class ModelIndex {
  readonly ops = new Map<string, IOp>();
  readonly vars = new Map<string, IVar>();
  readonly edgesTo = new Map<string, IEdge[]>();
  readonly edgesFrom = new Map<string, IEdge[]>();

  constructor(readonly model: IProgramModel) {
    model.ops.forEach(op => this.ops.set(op.id, op));
    model.vars.forEach(v => this.vars.set(v.id, v));
    for (const edge of model.edges) {
      push(this.edgesTo, edge.dst, edge);
      push(this.edgesFrom, edge.src, edge);
    }
  }

  /** The variables bound to one slot of an op, in slot order (outer-block vars included). */
  slotVars(op: IOp, slot: string, direction: 'in' | 'out'): (IVar | string)[] {
    const all = (direction === 'in' ? op.inputs : op.outputs)[slot] ?? [];
    // Paddle's files name a gradient nobody needs `@EMPTY@`: a slot of only those holds
    // nothing (one among real names keeps its position)
    const names = all.every(name => name === EMPTY_VAR_NAME) ? [] : all;
    const edges = direction === 'in' ? this.edgesTo.get(op.id) : this.edgesFrom.get(op.id);
    const byName = new Map<string, IVar>();
    for (const edge of edges ?? []) {
      const v = this.vars.get(direction === 'in' ? edge.src : edge.dst);
      if (v && edge.slot === slot) {
        byName.set(v.name, v);
      }
    }
    return names.map(name => byName.get(name) ?? this.resolve(op.block, name) ?? name);
  }

  /** A variable by name seen from a block: that block's, else its ancestors'. */
  resolve(blockId: string, name: string): IVar | undefined {
    for (let b = this.model.blocks.find(x => x.id === blockId); b; ) {
      const v = this.vars.get(`v:${b.idx}:${name}`);
      if (v) {
        return v;
      }
      const parent = b.parent;
      b = parent === null ? undefined : this.model.blocks.find(x => x.id === parent);
    }
    return undefined;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V) {
  const list = map.get(key);
  if (list) {
    list.push(value);
  } else {
    map.set(key, [value]);
  }
}

/** What the panel can ask its view to do. */
export interface IDetailsActions {
  select(id: string): void;
  toggleBlock(blockId: string): void;
  isCollapsed(blockId: string): boolean;
}

/** A short JSON text of an attribute value (long lists cut with a count). */
export function attrText(value: unknown): string {
  if (Array.isArray(value) && value.length > 16) {
    return `[${value.slice(0, 16).map(v => JSON.stringify(v)).join(', ')}, … ${value.length} items]`;
  }
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text;
}

function link(text: string, id: string, actions: IDetailsActions): HTMLElement {
  const a = el('button', 'fluid-nb-link', text);
  a.type = 'button';
  a.dataset.target = id;
  a.addEventListener('click', () => actions.select(id));
  return a;
}

function table(rows: [string, string | Node][]): HTMLTableElement {
  const t = el('table', 'fluid-nb-details-table');
  for (const [key, value] of rows) {
    const tr = el('tr');
    tr.appendChild(el('th', undefined, key));
    const td = el('td');
    td.appendChild(typeof value === 'string' ? document.createTextNode(value) : value);
    tr.appendChild(td);
    t.appendChild(tr);
  }
  return t;
}

function section(title: string): HTMLElement {
  return el('h4', 'fluid-nb-details-section', title);
}

/** Variable kinds that hold tensors; the others (LOD_RANK_TABLE, STEP_SCOPES, ...) have no
 * shape or dtype worth showing. */
const TENSOR_KINDS = new Set(['LOD_TENSOR', 'SELECTED_ROWS', 'LOD_TENSOR_ARRAY']);

function slotRows(
  index: ModelIndex,
  op: IOp,
  direction: 'in' | 'out',
  actions: IDetailsActions
): [string, Node][] {
  const slots = direction === 'in' ? op.inputs : op.outputs;
  return Object.keys(slots).map(slot => {
    const cell = el('span', 'fluid-nb-slot');
    const bound = index.slotVars(op, slot, direction);
    if (!bound.length) {
      cell.appendChild(el('span', 'fluid-nb-var-meta', '(empty)'));
    }
    bound.forEach((v, i) => {
      if (i > 0) {
        cell.appendChild(document.createTextNode(', '));
      }
      if (typeof v === 'string') {
        cell.appendChild(el('span', 'fluid-nb-var-name', v));
      } else {
        cell.appendChild(link(v.name, v.id, actions));
        const meta = TENSOR_KINDS.has(v.type)
          ? `${shapeText(v.shape)}${v.dtype ? ' ' + v.dtype : ''}`
          : `(${v.type.toLowerCase()})`;
        cell.appendChild(el('span', 'fluid-nb-var-meta', ' ' + meta));
      }
    });
    return [slot, cell] as [string, Node];
  });
}

/** The op's memory figures: `allocates 1.0 MiB in 3 blocks: fc_0.tmp_0, …` with each
 * variable a link, and a swatch of its fill. */
function memoryRows(
  index: ModelIndex,
  op: IOp,
  figures: IMemoryFigures,
  actions: IDetailsActions
): [string, Node][] {
  const figure = figures.ops[op.id];
  const cell = el('span', 'fluid-nb-details-memory');
  if (figure) {
    const swatch = el('span', 'fluid-nb-memory-swatch');
    swatch.style.background = memoryFill(figure.bytes, figures.min, figures.max);
    cell.appendChild(swatch);
  }
  const { head, names, extra } = memoryParts(figure);
  cell.appendChild(document.createTextNode(head + (names.length || extra.length ? ': ' : '')));
  names.forEach((name, i) => {
    if (i > 0) {
      cell.appendChild(document.createTextNode(', '));
    }
    const v = index.resolve(op.block, name);
    cell.appendChild(v ? link(name, v.id, actions) : el('span', 'fluid-nb-var-name', name));
  });
  if (extra.length) {
    cell.appendChild(document.createTextNode((names.length ? ', ' : '') + extra.join(', ')));
  }
  const rows: [string, Node][] = [['memory', cell]];
  if (figure) {
    rows.push(['bytes asked', document.createTextNode(
      `${figure.requested} (${bytesText(figure.requested)})`)]);
  }
  return rows;
}

function opDetails(index: ModelIndex, op: IOp, actions: IDetailsActions,
                   memory: IMemoryFigures | null = null): HTMLElement {
  const root = el('div', 'fluid-nb-details-op');
  const head = el('h3', 'fluid-nb-details-title');
  head.appendChild(el('span', 'fluid-nb-details-type', op.type));
  head.appendChild(el('span', `fluid-nb-role fluid-nb-role-${op.role}`, op.role));
  root.appendChild(head);
  const rows: [string, string | Node][] = [
    ['id', op.id],
    ['block', `${op.block}, position ${op.index}`]
  ];
  if (op.source) {
    rows.push(['source', op.source]);
  }
  if (op.kernel !== undefined && op.kernel !== null) {
    rows.push(['kernel', String(op.kernel)]);
  }
  if (op.last_run_ms !== undefined && op.last_run_ms !== null) {
    rows.push(['last run', `${Number(op.last_run_ms).toFixed(3)} ms`]);
  }
  if (memory) {
    rows.push(...memoryRows(index, op, memory, actions));
  }
  if (op.pair) {
    const other = index.ops.get(op.pair);
    rows.push([
      op.type.endsWith('_grad') ? 'forward op' : 'gradient op',
      other ? link(other.type, other.id, actions) : op.pair
    ]);
  }
  root.appendChild(table(rows));
  root.appendChild(section('Inputs'));
  root.appendChild(table(slotRows(index, op, 'in', actions)));
  root.appendChild(section('Outputs'));
  root.appendChild(table(slotRows(index, op, 'out', actions)));
  const attrNames = Object.keys(op.attrs).sort();
  if (attrNames.length) {
    root.appendChild(section('Attributes'));
    const t = table(attrNames.map(name => [name, attrText(op.attrs[name])]));
    t.classList.add('fluid-nb-attrs');
    root.appendChild(t);
  }
  if (op.sub_blocks.length) {
    root.appendChild(section('Sub-blocks'));
    for (const blockId of op.sub_blocks) {
      const button = el(
        'button',
        'fluid-nb-toggle-block',
        `${actions.isCollapsed(blockId) ? 'Expand' : 'Collapse'} ${blockId}`
      );
      button.type = 'button';
      button.dataset.block = blockId;
      button.addEventListener('click', () => actions.toggleBlock(blockId));
      root.appendChild(button);
    }
  }
  return root;
}

function opList(index: ModelIndex, edges: IEdge[] | undefined, end: 'src' | 'dst',
                actions: IDetailsActions): Node {
  const cell = el('span');
  const seen = new Set<string>();
  for (const edge of edges ?? []) {
    const op = index.ops.get(edge[end]);
    if (op && !seen.has(op.id)) {
      if (seen.size) {
        cell.appendChild(document.createTextNode(', '));
      }
      seen.add(op.id);
      cell.appendChild(link(`${op.type} (${edge.slot})`, op.id, actions));
    }
  }
  if (!seen.size) {
    cell.textContent = '—';
  }
  return cell;
}

function varDetails(index: ModelIndex, v: IVar, actions: IDetailsActions): HTMLElement {
  const root = el('div', 'fluid-nb-details-var');
  const head = el('h3', 'fluid-nb-details-title');
  head.appendChild(el('span', 'fluid-nb-details-type', v.name));
  const kind = v.parameter ? 'parameter' : v.persistable ? 'persistable' : 'variable';
  head.appendChild(el('span', `fluid-nb-role fluid-nb-kind-${kind}`, kind));
  root.appendChild(head);
  root.appendChild(
    table([
      ['id', v.id],
      ['type', v.type],
      ['dtype', v.dtype ?? '?'],
      ['shape', shapeText(v.shape)],
      ['LoD level', v.lod_level === null || v.lod_level === undefined ? '—' : String(v.lod_level)],
      ['persistable', String(v.persistable)],
      ['parameter', String(v.parameter)],
      ['stop gradient', String(v.stop_gradient)],
      ['written by', opList(index, index.edgesTo.get(v.id), 'src', actions)],
      ['read by', opList(index, index.edgesFrom.get(v.id), 'dst', actions)]
    ])
  );
  return root;
}

/** Fill `panel` with the details of the op or variable `id` (empty it for null); with
 * `memory`, an op's details say what it allocated. */
export function renderDetails(
  panel: HTMLElement,
  index: ModelIndex,
  id: string | null,
  actions: IDetailsActions,
  memory: IMemoryFigures | null = null
): void {
  panel.replaceChildren();
  const op = id === null ? undefined : index.ops.get(id);
  const v = id === null ? undefined : index.vars.get(id);
  panel.hidden = !op && !v;
  if (op) {
    panel.appendChild(opDetails(index, op, actions, memory));
  } else if (v) {
    panel.appendChild(varDetails(index, v, actions));
  }
  if (op || v) {
    panel.dataset.selected = id!;
  } else {
    delete panel.dataset.selected;
  }
}
