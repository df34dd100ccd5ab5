/**
 * The scope view: the scope tree as nested, foldable sections; each variable with its kind,
 * shape, dtype, LoD, place, bytes and a preview; the step scopes a loop keeps appear under the
 * variable that holds them. It draws `fluid_nb.viz.scope_model.scope_model`'s model.
 */
import { bytesText, ensureStyle, h, numberText, shapeText, table } from './dom';

/** One variable of a scope (fields the view reads). */
export interface IScopeEntry {
  name: string;
  kind: string;
  initialized: boolean;
  shape: number[] | null;
  dtype: string | null;
  lod: number[][];
  place: string | null;
  bytes: number;
  preview: unknown[];
  preview_truncated: boolean;
  length?: number;
  count?: number;
  items?: unknown[];
  scopes?: IScopeNode[];
}

/** One scope. */
export interface IScopeNode {
  id: string;
  depth: number;
  vars: IScopeEntry[];
  vars_truncated: boolean;
  kids: IScopeNode[];
  totals: { vars: number; bytes: number; subtree_bytes: number };
  truncated: boolean;
}

/** The scope model. */
export interface IScopeModel {
  format: 'fluid-nb.scope';
  root: IScopeNode;
  stats: { scopes: number; vars: number; bytes: number };
}

function kindText(entry: IScopeEntry): string {
  if (entry.length !== undefined) {
    return `${entry.kind}[${entry.length}]`;
  }
  if (entry.count !== undefined) {
    return `${entry.kind} (${entry.count})`;
  }
  return entry.kind;
}

function previewText(entry: IScopeEntry): string {
  if (entry.kind === 'LoDRankTable' && entry.items) {
    return 'rank order ' + JSON.stringify(entry.items);
  }
  if (!entry.preview || !entry.preview.length) {
    return '';
  }
  return `[${entry.preview.map(numberText).join(', ')}${entry.preview_truncated ? ', …' : ''}]`;
}

function scopeSection(node: IScopeNode, label: string, open: boolean): HTMLElement {
  const section = h('details', 'fluid-nb-scope');
  section.open = open;
  section.dataset.scope = node.id;
  section.appendChild(h('summary', '', `${label}: ${node.totals.vars} variable(s), ${bytesText(node.totals.bytes)}` +
    (node.kids.length ? `, ${node.kids.length} kid scope(s)` : '') +
    (node.truncated ? ' (deeper than shown)' : '')));
  if (node.vars.length) {
    const rows = node.vars.map(entry => [
      h('code', '', entry.name),
      kindText(entry),
      entry.initialized && entry.shape ? shapeText(entry.shape) : '',
      entry.dtype ?? '',
      entry.lod && entry.lod.length ? JSON.stringify(entry.lod) : '',
      entry.place ?? '',
      entry.initialized ? bytesText(entry.bytes) : '',
      h('code', '', previewText(entry))
    ]);
    section.appendChild(table(['name', 'kind', 'shape', 'dtype', 'LoD', 'place', 'bytes', 'value'], rows));
  }
  if (node.vars_truncated) {
    section.appendChild(h('div', 'fluid-nb-note', 'more variables not shown'));
  }
  for (const entry of node.vars) {
    (entry.scopes ?? []).forEach((step, k) => section.appendChild(scopeSection(step, `${entry.name} step ${k}`, false)));
  }
  node.kids.forEach((kid, k) => section.appendChild(scopeSection(kid, `kid scope ${k}`, kid.depth < 2)));
  return section;
}

/** Draw `model` into `el` (replacing what was there). */
export function renderScope(el: HTMLElement, model: IScopeModel): void {
  ensureStyle();
  el.replaceChildren();
  const root = h('div', 'fluid-nb-view fluid-nb-scope-view');
  root.appendChild(h('div', 'fluid-nb-head',
    `Scope tree: ${model.stats.scopes} scope(s), ${model.stats.vars} variable(s), ${bytesText(model.stats.bytes)}`));
  root.appendChild(scopeSection(model.root, 'scope', true));
  el.appendChild(root);
}
