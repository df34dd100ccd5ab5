/**
 * `renderProgram(el, model, options)`: the interactive program graph. Used by the JupyterLab
 * MIME renderer, the program-file viewer, the ProgramView widget and the standalone HTML
 * viewer.
 *
 * The graph is laid out by Graphviz (WebAssembly); node ids in the SVG are model ids. Click an
 * op or variable for its details, click a cluster label (or use the op's Sub-blocks buttons,
 * or double-click the op) to collapse or expand a sub-block, type in the search box to
 * highlight matching ops and variables (Enter opens the groups holding the first one and
 * goes to it). Ops with `new: true` are highlighted. A program of more than
 * `FOLD_THRESHOLD` ops is drawn folded (`./hierarchy`): its groups are boxes that open on
 * click into clusters, whose label closes them again; it opens with as many groups open as
 * keep the drawing readable, a breadcrumb shows where the selection is, Escape (or
 * Backspace) closes the innermost open group around it, and a minimap shows where the view
 * is in a drawing taller or wider than the view. With memory
 * figures (`setMemory`, or a model's `memory`) each op that allocated something is filled by
 * its bytes on a log scale, with a legend above the graph and the figures in its details.
 */
import { applyDelta as applyModelDelta } from './delta';
import { ModelIndex, renderDetails } from './details';
import {
  ISegment, IViewOptions, SEGMENT_OPS, SEGMENT_THRESHOLD, segmentDots, shownOpCount
} from './dot';
import { FOLD_THRESHOLD, Hierarchy, firstSightOpen, foldedDot } from './hierarchy';
import { memoryFill, memoryLegend } from './memory';
import { IMemoryFigures, IProgramDelta, IProgramModel, isMemoryFigures } from './model';
import { drawSvg, graphviz } from './viz';

/** What was clicked: an op or a variable of the model. */
export interface ISelection {
  kind: 'op' | 'var';
  id: string;
}

/** Figures of one render, also written on the root element as `data-*` attributes. */
export interface IRenderStats {
  /** Model revision drawn. */
  revision: number;
  /** Wall time of the whole render (DOT assembly, layout, DOM), milliseconds. */
  ms: number;
  /** Of which Graphviz layout, milliseconds. */
  layoutMs: number;
  /** Segments drawn, and how many of them were laid out anew (others reused). */
  segments: number;
  laidOut: number;
  /** Op and variable nodes in the SVG. */
  nodes: number;
}

/** Options of `renderProgram`. All optional. */
export interface IRenderOptions extends IViewOptions {
  /** Block ids collapsed at first. */
  collapsed?: string[];
  /** Title shown in the toolbar (default: the model's). */
  title?: string;
  /** Element id selected at first. */
  selected?: string | null;
  /** Search text at first. */
  search?: string;
  /** Bytes allocated per op in a recorded run (default: the model's `memory`). */
  memory?: IMemoryFigures | null;
  /** Called when the selection changes (null: cleared). */
  onSelect?: (selection: ISelection | null) => void;
  /** Called when the search text changes. */
  onSearch?: (text: string) => void;
  /** Called after every render with its figures. */
  onRender?: (stats: IRenderStats) => void;
  /** Show the toolbar (default true) and the details panel (default true). */
  toolbar?: boolean;
  details?: boolean;
  /** Above this many ops the graph is laid out in segments of `segmentOps` ops (a model
   * without groups), or drawn folded above `foldThreshold` (a model with groups). */
  segmentThreshold?: number;
  segmentOps?: number;
  foldThreshold?: number;
  /** Groups open at first (default: as many as keep the first sight readable). */
  open?: string[];
  /** Reveal at first: an op or variable id, or a search text whose first match is shown. */
  reveal?: string;
}

/** The live view returned by `renderProgram`. */
export interface IProgramHandle {
  readonly element: HTMLElement;
  /** The model drawn (after every delta applied so far). */
  readonly model: IProgramModel;
  /** Resolves after the first render. */
  readonly ready: Promise<IRenderStats>;
  /** Figures of the latest render. */
  readonly stats: IRenderStats | null;
  /** Apply a delta (its `base` must be the model's revision) and redraw; only the ops it adds
   * stay highlighted. Rejects with `DeltaMismatch` on a revision mismatch. */
  applyDelta(delta: IProgramDelta): Promise<IRenderStats>;
  /** Replace the model and redraw (a model carrying `memory` figures replaces them too). */
  setModel(model: IProgramModel): Promise<IRenderStats>;
  /** The memory figures shown, or null. */
  readonly memory: IMemoryFigures | null;
  /** Tint the ops by the bytes they allocated (null: back to colours by role); no layout. */
  setMemory(figures: IMemoryFigures | null): void;
  /** Select an op or variable by model id (null clears). */
  select(id: string | null): void;
  /** Highlight the ops and variables matching `text`; returns the number of matches. */
  setSearch(text: string): number;
  /** Collapse or expand one sub-block, or set the collapsed set. */
  toggleBlock(blockId: string): Promise<IRenderStats>;
  setCollapsed(blockIds: string[]): Promise<IRenderStats>;
  /** Draw parameters as nodes or inside their ops; hide op roles (`backward`, `optimize`). */
  setView(view: IViewOptions): Promise<IRenderStats>;
  /** Zoom to fit the view (as on open); returns the zoom. */
  fit(): number;
  /** The groups open now (null while the graph is not drawn folded). */
  readonly openGroups: string[] | null;
  /** Open or close one group of a folded drawing, or set the open ones. */
  toggleGroup(groupId: string): Promise<IRenderStats>;
  setOpenGroups(groupIds: string[]): Promise<IRenderStats>;
  /** Open the groups holding an op or variable (or the first match of a search text, or
   * else the first group whose label holds the text), select it and scroll it into sight;
   * resolves to its id (the group's), or null when nothing matched. */
  reveal(idOrText: string): Promise<string | null>;
  /** Remove the view and its listeners. */
  dispose(): void;
}

interface IDrawn {
  segment: ISegment;
  box: HTMLElement;
}

function div(className: string, text?: string): HTMLDivElement {
  const d = document.createElement('div');
  d.className = className;
  if (text !== undefined) {
    d.textContent = text;
  }
  return d;
}

/** A toolbar checkbox; `onChange` gets the new state. */
function toggle(
  className: string,
  text: string,
  title: string,
  checked: boolean,
  onChange: (on: boolean) => unknown
): HTMLLabelElement {
  const label = document.createElement('label');
  label.className = `fluid-nb-toggle ${className}`;
  label.title = title;
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = checked;
  box.addEventListener('change', () => void onChange(box.checked));
  label.append(box, document.createTextNode(' ' + text));
  return label;
}

function button(className: string, text: string, title: string): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = text;
  b.title = title;
  return b;
}

/** CSS pixels per point: Graphviz sizes its SVG in points. */
const PX_PER_PT = 4 / 3;
/** Below this a fitted graph's labels are too small to read (9 px for the 9-point rows
 * inside ops): it scrolls instead. */
const MIN_FIT_ZOOM = 0.75;
/** Room left around a fitted graph (scrollbars, padding), in pixels. */
const FIT_MARGIN = 16;

class ProgramGraph implements IProgramHandle {
  readonly element: HTMLElement;
  ready: Promise<IRenderStats>;
  stats: IRenderStats | null = null;
  model: IProgramModel;
  memory: IMemoryFigures | null;

  private index: ModelIndex;
  private collapsed: Set<string>;
  private selected: string | null;
  private search: string;
  private drawn: IDrawn[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private view: IViewOptions;
  private hierarchy: Hierarchy;
  /** Open groups of the folded drawing; null until the first folded render decides. */
  private open: Set<string> | null;
  /** Whether the latest render was folded, and what each op was drawn as. */
  private folded = false;
  private drawnAs = new Map<string, string>();
  private pendingReveal: string | null;
  private readonly crumbs: HTMLDivElement;
  private readonly minimap: HTMLDivElement;
  private zoom = 1;
  /** Whether the user chose a zoom (then resizes and renders keep it, not a fitted one). */
  private userZoomed = false;
  /** Whether the view was fitted to a known width (the first render may come before it has
   * one: then the resize observer fits it). */
  private fitted = false;
  private lastWidth = 0;
  private readonly resizeObserver: ResizeObserver | null;
  private readonly graph: HTMLDivElement;
  private readonly panel: HTMLDivElement;
  private readonly legend: HTMLDivElement;
  private readonly statsLabel: HTMLSpanElement;
  private readonly titleLabel: HTMLSpanElement;
  private readonly matchesLabel: HTMLSpanElement;
  private readonly searchBox: HTMLInputElement;

  constructor(
    host: HTMLElement,
    model: IProgramModel,
    private readonly options: IRenderOptions
  ) {
    this.model = model;
    this.memory = figuresOf(options.memory !== undefined ? options.memory : model.memory);
    this.index = new ModelIndex(model);
    this.hierarchy = new Hierarchy(model);
    this.open = options.open ? new Set(options.open) : null;
    this.pendingReveal = options.reveal ?? null;
    this.collapsed = new Set(options.collapsed ?? []);
    this.selected = options.selected ?? null;
    this.search = options.search ?? '';
    this.view = { paramsAsNodes: !!options.paramsAsNodes, hiddenRoles: [...(options.hiddenRoles ?? [])] };

    this.element = div('fluid-nb-program');
    this.element.dataset.paramsAsNodes = String(!!this.view.paramsAsNodes);
    this.element.dataset.hiddenRoles = (this.view.hiddenRoles ?? []).join(',');
    const toolbar = div('fluid-nb-program-toolbar');
    this.titleLabel = document.createElement('span');
    this.titleLabel.className = 'fluid-nb-program-title';
    this.statsLabel = document.createElement('span');
    this.statsLabel.className = 'fluid-nb-program-stats';
    this.searchBox = document.createElement('input');
    this.searchBox.type = 'search';
    this.searchBox.className = 'fluid-nb-program-search';
    this.searchBox.placeholder = 'Search ops and variables';
    this.searchBox.value = this.search;
    this.searchBox.addEventListener('input', () => {
      this.setSearch(this.searchBox.value);
      this.options.onSearch?.(this.searchBox.value);
    });
    this.searchBox.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        void this.reveal(this.searchBox.value);
      }
    });
    this.matchesLabel = document.createElement('span');
    this.matchesLabel.className = 'fluid-nb-program-matches';
    const zoomOut = button('fluid-nb-zoom-out', '−', 'Zoom out');
    const zoomIn = button('fluid-nb-zoom-in', '+', 'Zoom in');
    zoomOut.addEventListener('click', () => this.setZoom(this.zoom / 1.25, true));
    zoomIn.addEventListener('click', () => this.setZoom(this.zoom * 1.25, true));
    const fit = button('fluid-nb-fit', 'Fit', 'Fit the graph to the view');
    fit.addEventListener('click', () => this.fit());
    const paramsToggle = toggle(
      'fluid-nb-params-as-nodes', 'Parameters as nodes',
      'Draw parameters and other persistable variables as their own nodes, and the values ' +
        'gradient ops and sub-blocks read from afar as edges, instead of rows inside the ops',
      !!this.view.paramsAsNodes,
      on => this.setView({ paramsAsNodes: on })
    );
    const roleToggle = (role: string, label: string) =>
      toggle(
        `fluid-nb-show-${role}`, label, `Show the ${role} ops (hidden: folded away)`,
        !this.view.hiddenRoles?.includes(role),
        on => {
          const roles = new Set(this.view.hiddenRoles ?? []);
          if (on) {
            roles.delete(role);
          } else {
            roles.add(role);
          }
          return this.setView({ hiddenRoles: [...roles] });
        }
      );
    const collapseAll = button('fluid-nb-collapse-all', 'Collapse blocks', 'Collapse all sub-blocks');
    collapseAll.addEventListener('click', () =>
      this.setCollapsed(this.model.blocks.filter(b => b.parent !== null).map(b => b.id))
    );
    const expandAll = button('fluid-nb-expand-all', 'Expand blocks', 'Expand all sub-blocks');
    expandAll.addEventListener('click', () => this.setCollapsed([]));
    const openAll = button('fluid-nb-open-groups', 'Open groups',
                           'Open every group of a folded drawing: every op drawn');
    openAll.addEventListener('click', () => this.setOpenGroups([...this.hierarchy.groups.keys()]));
    const fold = button('fluid-nb-fold-groups', 'Fold', 'Fold the groups as at first sight');
    fold.addEventListener('click', () => {
      this.open = null;
      this.fitted = false;
      void this.enqueue();
    });
    toolbar.append(this.titleLabel, this.statsLabel, this.searchBox, this.matchesLabel,
                   zoomOut, zoomIn, fit, collapseAll, expandAll, openAll, fold, paramsToggle,
                   roleToggle('backward', 'Backward'), roleToggle('optimize', 'Optimizer'));
    toolbar.hidden = options.toolbar === false;

    this.crumbs = div('fluid-nb-program-crumbs');
    this.crumbs.hidden = true;
    const body = div('fluid-nb-program-body');
    this.graph = div('fluid-nb-program-graph');
    this.graph.tabIndex = 0;
    this.graph.addEventListener('keydown', this.onKey);
    this.graph.addEventListener('scroll', () => this.drawViewport());
    this.minimap = div('fluid-nb-program-minimap');
    this.minimap.hidden = true;
    this.minimap.addEventListener('click', this.onMinimapClick);
    this.graph.addEventListener('click', this.onClick);
    this.graph.addEventListener('dblclick', this.onDoubleClick);
    this.panel = div('fluid-nb-program-details');
    this.panel.hidden = true;
    const graphHost = div('fluid-nb-program-graph-host');
    graphHost.append(this.graph, this.minimap);
    body.append(graphHost, this.panel);
    this.legend = div('fluid-nb-memory-legend-host');
    this.element.append(toolbar, this.crumbs, this.legend, body);
    this.drawLegend();
    host.appendChild(this.element);

    // the view may be drawn before it is attached or sized (JupyterLab lays outputs out
    // later): fit again whenever its width changes, until the user picks a zoom
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            const width = this.graph.clientWidth;
            if (width !== this.lastWidth && !this.userZoomed && this.drawn.length) {
              this.fit(false);
            }
          });
    this.resizeObserver?.observe(this.graph);

    this.ready = this.enqueue();
  }

  /**
   * Zoom so the whole graph fits the view: its width in the view's width and, where that
   * stays readable, its height in the view's height (never above 1:1, never below
   * `MIN_FIT_ZOOM`; a taller graph scrolls). `byUser` (the Fit button) also drops a zoom the
   * user chose, so later renders fit again.
   */
  fit(byUser = true): number {
    if (byUser) {
      this.userZoomed = false;
    }
    const width = this.graph.clientWidth;
    this.lastWidth = width;
    let naturalWidth = 0;
    let naturalHeight = 0;
    for (const { box } of this.drawn) {
      const svg = box.querySelector('svg');
      const view = svg?.viewBox.baseVal;
      if (view && view.width) {
        naturalWidth = Math.max(naturalWidth, view.width * PX_PER_PT);
        naturalHeight += view.height * PX_PER_PT;
      }
    }
    if (!width || !naturalWidth) {
      return this.zoom;
    }
    this.fitted = true;
    const height = this.viewHeight();
    const byWidth = (width - FIT_MARGIN) / naturalWidth;
    const byHeight = (height - FIT_MARGIN) / naturalHeight;
    const zoom = Math.min(1, byWidth, Math.max(byHeight, MIN_FIT_ZOOM));
    if (byUser || Math.abs(zoom - this.zoom) > 1e-3) {
      // rescaling every drawing makes the browser lay them all out again: only on a change
      this.setZoom(zoom, false);
    }
    if (byUser) {
      this.graph.scrollTop = 0;
      this.graph.scrollLeft = 0;
    }
    return this.zoom;
  }

  /** The height the graph may take: its CSS max-height, else the window's 70%. */
  private viewHeight(): number {
    const max = parseFloat(getComputedStyle(this.graph).maxHeight);
    return Number.isFinite(max) && max > 0 ? max : window.innerHeight * 0.7;
  }

  /** Scroll the view (not the page) so the first new op is in sight. */
  private revealNew(): void {
    const node = this.graph.querySelector<SVGGElement>('g.node.fluid-nb-new');
    if (!node) {
      return;
    }
    const view = this.graph.getBoundingClientRect();
    const rect = node.getBoundingClientRect();
    const inside =
      rect.top >= view.top && rect.bottom <= view.bottom &&
      rect.left >= view.left && rect.right <= view.right;
    if (!inside) {
      this.graph.scrollTop += rect.top - view.top - (view.height - rect.height) / 2;
      this.graph.scrollLeft += rect.left - view.left - (view.width - rect.width) / 2;
    }
  }

  applyDelta(delta: IProgramDelta): Promise<IRenderStats> {
    // applied now, so a second delta sent before the first render ends finds the new revision
    this.model = applyModelDelta(this.model, delta);
    return this.enqueue();
  }

  setModel(model: IProgramModel): Promise<IRenderStats> {
    this.model = model;
    if (model.memory !== undefined) {
      this.memory = figuresOf(model.memory);
      this.drawLegend();
    }
    return this.enqueue();
  }

  setMemory(figures: IMemoryFigures | null): void {
    this.memory = figuresOf(figures);
    this.drawLegend();
    this.paintMemory();
    this.select(this.selected);  // the details panel shows the figures
  }

  private drawLegend(): void {
    this.legend.replaceChildren();
    this.legend.hidden = !this.memory;
    if (this.memory) {
      this.legend.appendChild(memoryLegend(this.memory));
    }
    this.element.dataset.memory = String(!!this.memory);
  }

  /** Fill each op node by the bytes it allocated; ops without figures get their own fill
   * back (kept in `data-fill` the first time a shape is tinted). */
  private paintMemory(): void {
    const figures = this.memory;
    for (const { box } of this.drawn) {
      box.querySelectorAll<SVGGElement>('g.node.op').forEach(g => {
        const figure = figures?.ops[g.id];
        const fill = figure ? memoryFill(figure.bytes, figures!.min, figures!.max) : null;
        g.classList.toggle('fluid-nb-mem', !!fill);
        if (figure) {
          g.setAttribute('data-bytes', String(figure.bytes));
        } else {
          g.removeAttribute('data-bytes');
        }
        g.querySelectorAll<SVGElement>('polygon, path, ellipse').forEach(shape => {
          const own = shape.getAttribute('data-fill') ?? shape.getAttribute('fill');
          if (!own || own === 'none' || own === 'transparent') {
            return;
          }
          if (fill) {
            shape.setAttribute('data-fill', own);
            shape.setAttribute('fill', fill);
          } else if (shape.hasAttribute('data-fill')) {
            shape.setAttribute('fill', own);
            shape.removeAttribute('data-fill');
          }
        });
      });
    }
  }

  select(id: string | null): void {
    const known = id !== null && (this.index.ops.has(id) || this.index.vars.has(id));
    const next = known ? id : null;
    const changed = next !== this.selected;
    this.selected = next;
    this.paintClasses();
    this.drawCrumbs();
    if (this.options.details !== false) {
      renderDetails(this.panel, this.index, this.selected, this.actions, this.memory);
    }
    if (changed) {
      this.options.onSelect?.(
        next === null ? null : { kind: this.index.ops.has(next) ? 'op' : 'var', id: next }
      );
    }
  }

  setSearch(text: string): number {
    this.search = text;
    if (this.searchBox.value !== text) {
      this.searchBox.value = text;
    }
    return this.paintClasses();
  }

  toggleBlock(blockId: string): Promise<IRenderStats> {
    if (this.collapsed.has(blockId)) {
      this.collapsed.delete(blockId);
    } else {
      this.collapsed.add(blockId);
    }
    return this.enqueue();
  }

  setCollapsed(blockIds: string[]): Promise<IRenderStats> {
    this.collapsed = new Set(blockIds);
    this.fitted = false;
    return this.enqueue();
  }

  /** Change what is drawn (parameters as nodes, hidden roles) and redraw. */
  setView(view: IViewOptions): Promise<IRenderStats> {
    this.view = { ...this.view, ...view };
    const data = this.element.dataset;
    data.paramsAsNodes = String(!!this.view.paramsAsNodes);
    data.hiddenRoles = (this.view.hiddenRoles ?? []).join(',');
    this.fitted = false;  // a different drawing: fit it again (unless the user zoomed)
    return this.enqueue();
  }

  get openGroups(): string[] | null {
    return this.folded && this.open ? [...this.open] : null;
  }

  toggleGroup(groupId: string): Promise<IRenderStats> {
    const open = this.open ?? new Set<string>();
    if (open.has(groupId)) {
      // closing a group closes what is open inside it too
      open.delete(groupId);
      for (const id of [...open]) {
        if (this.hierarchy.ancestors(id).includes(groupId)) {
          open.delete(id);
        }
      }
      this.focus = this.hierarchy.parentOf.get(groupId) ?? null;
    } else {
      open.add(groupId);
      this.focus = groupId;
    }
    this.open = open;
    return this.enqueue();
  }

  setOpenGroups(groupIds: string[]): Promise<IRenderStats> {
    this.open = new Set(groupIds);
    this.fitted = false;  // a different drawing: fit it again (unless the user zoomed)
    return this.enqueue();
  }

  async reveal(idOrText: string): Promise<string | null> {
    const target = this.findTarget(idOrText);
    if (target === null) {
      return this.revealGroup(idOrText);
    }
    // the block-0 op whose groups must be open: the op, the owner of its block, or for a
    // variable its first writer (else reader)
    let op = this.index.ops.get(target)?.id;
    if (!op) {
      const edges = [...(this.index.edgesTo.get(target) ?? []), ...(this.index.edgesFrom.get(target) ?? [])];
      op = edges.map(e => (e.src === target ? e.dst : e.src))[0];
    }
    if (op && this.folded) {
      let top = op;
      for (let guard = 0; guard < 64; guard++) {
        const block = this.model.blocks.find(b => b.id === this.index.ops.get(top)?.block);
        if (!block || block.parent === null || !block.owner) {
          break;
        }
        top = block.owner;
      }
      const path = this.hierarchy.ancestors(top);
      if (path.some(g => !this.open?.has(g))) {
        this.open = new Set([...(this.open ?? []), ...path]);
        this.focus = path[path.length - 1] ?? null;
        await this.enqueue();
      }
    }
    this.select(target);
    const node =
      this.graph.querySelector<SVGGElement>(`g.node[id="${cssEscape(target)}"]`) ??
      (op ? this.graph.querySelector<SVGGElement>(`g.node[id="${cssEscape(this.drawnAs.get(op) ?? op)}"]`) : null);
    node?.scrollIntoView({ block: 'center', inline: 'center' });
    return target;
  }

  /** Open the first group (in drawing order) whose label holds `text` and the groups
   * around it, and scroll to it: `reveal("basicblock")` opens a ResNet's first block. */
  private async revealGroup(text: string): Promise<string | null> {
    const needle = text.trim().toLowerCase();
    if (!needle || !this.folded) {
      return null;
    }
    const group = [...this.hierarchy.groups.values()].find(
      g => g.kind !== 'section' && g.label.toLowerCase().includes(needle));
    if (!group) {
      return null;
    }
    this.open = new Set([...(this.open ?? []), ...this.hierarchy.ancestors(group.id), group.id]);
    this.focus = group.id;
    await this.enqueue();
    this.drawCrumbs();
    const cluster = Array.from(this.graph.querySelectorAll<SVGGElement>('g.cluster')).find(
      g => g.querySelector('title')?.textContent === 'cluster_' + group.id);
    cluster?.scrollIntoView({ block: 'start', inline: 'center' });
    return group.id;
  }

  /** An op or variable id, or the first op (in program order) matching a search text,
   * else the first matching variable. */
  private findTarget(idOrText: string): string | null {
    if (this.index.ops.has(idOrText) || this.index.vars.has(idOrText)) {
      return idOrText;
    }
    const needle = idOrText.trim().toLowerCase();
    if (!needle) {
      return null;
    }
    const op = this.model.ops.find(o => matchesSearch(needle, o.id, o.type, undefined, o));
    if (op) {
      return op.id;
    }
    return this.model.vars.find(v => matchesSearch(needle, v.id, undefined, v.name, undefined))?.id ?? null;
  }

  /** The group the user last opened or went up to: where Escape goes up from. */
  private focus: string | null = null;

  /** The path to the selection (or the group last opened): the program, then each group. */
  private drawCrumbs(): void {
    const crumbs = this.crumbs;
    crumbs.replaceChildren();
    if (!this.folded) {
      crumbs.hidden = true;
      return;
    }
    crumbs.hidden = false;
    let path: string[] = [];
    let leaf: string | null = null;
    const op = this.selected ? this.index.ops.get(this.selected) : undefined;
    if (op) {
      const as = this.drawnAs.get(op.id);
      let top = op.id;
      for (let guard = 0; guard < 64; guard++) {
        const block = this.model.blocks.find(b => b.id === this.index.ops.get(top)?.block);
        if (!block || block.parent === null || !block.owner) {
          break;
        }
        top = block.owner;
      }
      path = this.hierarchy.ancestors(top);
      leaf = as === op.id ? op.type : null;
    } else if (this.focus && this.hierarchy.groups.has(this.focus)) {
      path = [...this.hierarchy.ancestors(this.focus), this.focus];
    }
    const item = (text: string, title: string, onClick: (() => void) | null) => {
      const b = document.createElement(onClick ? 'button' : 'span');
      b.className = 'fluid-nb-crumb';
      b.textContent = text;
      b.title = title;
      if (onClick) {
        (b as HTMLButtonElement).type = 'button';
        b.addEventListener('click', onClick);
      }
      crumbs.append(b);
    };
    item(this.options.title ?? this.model.title ?? 'program', 'Close every group',
         () => void this.setOpenGroups([]));
    for (const id of path) {
      const group = this.hierarchy.groups.get(id)!;
      crumbs.append(document.createTextNode(' › '));
      item(group.label, `Close ${group.label} (${group.ops} ops)`, () => void this.toggleGroup(id));
    }
    if (leaf) {
      crumbs.append(document.createTextNode(' › '));
      item(leaf, '', null);
    }
  }

  /** Escape or Backspace: close the innermost open group around the selection (else the
   * group last opened): one level up. */
  private readonly onKey = (ev: KeyboardEvent) => {
    if ((ev.key !== 'Escape' && ev.key !== 'Backspace') || !this.folded || !this.open?.size) {
      return;
    }
    let path: string[] = [];
    const op = this.selected ? this.index.ops.get(this.selected) : undefined;
    if (op && this.index.ops.get(op.id)?.block === this.model.blocks[0]?.id) {
      path = this.hierarchy.ancestors(op.id);
    } else if (this.focus && this.hierarchy.groups.has(this.focus)) {
      path = [...this.hierarchy.ancestors(this.focus), this.focus];
    }
    const innermost = path.filter(g => this.open!.has(g)).pop();
    if (innermost) {
      ev.preventDefault();
      this.select(null);
      void this.toggleGroup(innermost);
    }
  };

  /** A small copy of the drawing with the part in view outlined, shown when the drawing
   * does not fit the view; a click there scrolls the view to that point. */
  private drawMinimap(): void {
    const graph = this.graph;
    const overflow =
      graph.scrollHeight > graph.clientHeight + 4 || graph.scrollWidth > graph.clientWidth + 4;
    const svg = this.drawn.length === 1 ? this.drawn[0].box.querySelector('svg') : null;
    this.minimap.replaceChildren();
    this.minimap.hidden = !overflow || !svg;
    if (!overflow || !svg) {
      return;
    }
    const copy = svg.cloneNode(true) as SVGSVGElement;
    copy.removeAttribute('width');
    copy.removeAttribute('height');
    // a picture only: no ids or classes a query for the graph's nodes could find
    copy.querySelectorAll('[id]').forEach(el => el.removeAttribute('id'));
    copy.querySelectorAll('[class]').forEach(el => el.removeAttribute('class'));
    copy.querySelectorAll('title').forEach(el => el.remove());
    copy.setAttribute('aria-hidden', 'true');
    copy.classList.add('fluid-nb-minimap-drawing');
    const frame = div('fluid-nb-minimap-view');
    this.minimap.append(copy, frame);
    this.drawViewport();
  }

  private drawViewport(): void {
    const frame = this.minimap.querySelector<HTMLElement>('.fluid-nb-minimap-view');
    const copy = this.minimap.querySelector<SVGSVGElement>('svg');
    if (!frame || !copy || this.minimap.hidden) {
      return;
    }
    const graph = this.graph;
    const drawn = copy.getBoundingClientRect();
    const sx = drawn.width / Math.max(1, graph.scrollWidth);
    const sy = drawn.height / Math.max(1, graph.scrollHeight);
    frame.style.left = `${graph.scrollLeft * sx}px`;
    frame.style.top = `${graph.scrollTop * sy}px`;
    frame.style.width = `${Math.min(drawn.width, graph.clientWidth * sx)}px`;
    frame.style.height = `${Math.min(drawn.height, graph.clientHeight * sy)}px`;
  }

  private readonly onMinimapClick = (ev: MouseEvent) => {
    const copy = this.minimap.querySelector<SVGSVGElement>('svg');
    if (!copy) {
      return;
    }
    const rect = copy.getBoundingClientRect();
    const graph = this.graph;
    const fx = (ev.clientX - rect.left) / Math.max(1, rect.width);
    const fy = (ev.clientY - rect.top) / Math.max(1, rect.height);
    graph.scrollLeft = fx * graph.scrollWidth - graph.clientWidth / 2;
    graph.scrollTop = fy * graph.scrollHeight - graph.clientHeight / 2;
  };

  dispose(): void {
    this.disposed = true;
    this.resizeObserver?.disconnect();
    this.graph.removeEventListener('click', this.onClick);
    this.graph.removeEventListener('dblclick', this.onDoubleClick);
    this.graph.removeEventListener('keydown', this.onKey);
    this.element.remove();
  }

  private readonly actions = {
    select: (id: string) => this.select(id),
    toggleBlock: (blockId: string) => void this.toggleBlock(blockId),
    isCollapsed: (blockId: string) => this.collapsed.has(blockId)
  };

  /** Renders run one after another, each drawing the latest state. */
  private enqueue(): Promise<IRenderStats> {
    const run = this.queue.then(() => this.render());
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async render(): Promise<IRenderStats> {
    const start = performance.now();
    const model = this.model;
    if (this.index.model !== model) {
      this.index = new ModelIndex(model);
      this.hierarchy = new Hierarchy(model);
    }
    const hierarchy = this.hierarchy;
    this.folded =
      hierarchy.usable &&
      shownOpCount(model, this.collapsed, this.view) >
        (this.options.foldThreshold ?? FOLD_THRESHOLD);
    let segments: ISegment[];
    if (this.folded) {
      if (this.open === null) {
        const visible = new Set(
          model.ops.filter(op => !this.view.hiddenRoles?.includes(op.role)).map(op => op.id)
        );
        this.open = firstSightOpen(hierarchy, visible);
      }
      this.open.forEach(id => {
        if (!hierarchy.groups.has(id)) {
          this.open!.delete(id);  // a group the program no longer has
        }
      });
      const drawing = foldedDot(model, hierarchy, this.open, this.collapsed, this.view);
      this.drawnAs = drawing.drawnAs;
      segments = [{ dot: drawing.dot, caption: '', refs: new Map() }];
    } else {
      this.drawnAs = new Map();
      segments = segmentDots(
        model,
        this.collapsed,
        this.options.segmentThreshold ?? SEGMENT_THRESHOLD,
        this.options.segmentOps ?? SEGMENT_OPS,
        this.view
      );
    }
    mark('fluid-nb-render-start');
    const viz = await graphviz();
    mark('fluid-nb-graphviz-ready');
    const reuse = new Map(this.drawn.map(d => [d.segment.dot, d] as [string, IDrawn]));
    let layoutMs = 0;
    let laidOut = 0;
    const drawn: IDrawn[] = segments.map(segment => {
      const old = reuse.get(segment.dot);
      if (old) {
        reuse.delete(segment.dot);
        old.segment = segment;
        (old.box.firstChild as HTMLElement).textContent = segment.caption;
        return old;
      }
      const t = performance.now();
      const svg = drawSvg(viz, segment.dot);
      layoutMs += performance.now() - t;
      laidOut += 1;
      const box = div('fluid-nb-program-segment');
      const caption = div('fluid-nb-program-caption', segment.caption);
      caption.hidden = !segment.caption;
      box.append(caption, svg);
      this.scaleSvg(svg);
      return { segment, box };
    });
    if (this.disposed) {
      throw new Error('program view disposed');
    }
    this.placeBoxes(drawn.map(d => d.box));
    this.drawn = drawn;
    this.paintMemory();

    const title = this.options.title ?? model.title ?? '';
    this.titleLabel.textContent = title;
    this.titleLabel.hidden = !title;
    const hiddenOps = model.ops.filter(op => this.view.hiddenRoles?.includes(op.role)).length;
    this.statsLabel.textContent =
      `${model.ops.length} ops · ${model.vars.length} vars · ${model.blocks.length} blocks` +
      (hiddenOps ? ` · ${hiddenOps} hidden` : '');
    this.select(this.selected);
    if (!this.userZoomed && !this.fitted) {
      this.fit(false);  // later renders (deltas) keep the zoom; a resize fits again
    }
    // after the browser has laid the drawing out anyway (reading positions now would force
    // a second layout of every node inside the render)
    requestAnimationFrame(() => this.revealNew());
    const nodes = this.graph.querySelectorAll('g.node').length;
    const stats: IRenderStats = {
      revision: model.revision,
      ms: performance.now() - start,
      layoutMs,
      segments: segments.length,
      laidOut,
      nodes
    };
    this.stats = stats;
    const data = this.element.dataset;
    data.revision = String(stats.revision);
    data.renderMs = stats.ms.toFixed(1);
    data.layoutMs = stats.layoutMs.toFixed(1);
    data.segments = String(stats.segments);
    data.laidOut = String(stats.laidOut);
    data.nodes = String(nodes);
    data.zoom = this.zoom.toFixed(3);
    data.folded = String(this.folded);
    if (!data.firstPaintMs) {
      mark('fluid-nb-first-paint');
      // the page's clock: milliseconds from the navigation's start to the first drawing
      data.firstPaintMs = performance.now().toFixed(0);
      data.firstLayoutMs = stats.layoutMs.toFixed(0);
      data.firstRenderMs = stats.ms.toFixed(0);
    }
    data.openGroups = String(this.open?.size ?? 0);
    this.drawMinimap();
    this.options.onRender?.(stats);
    if (this.pendingReveal !== null) {
      const target = this.pendingReveal;
      this.pendingReveal = null;
      void this.reveal(target);
    }
    return stats;
  }

  /** Put the segment boxes in order, moving only those not already in place: re-inserting
   * an unchanged drawing would make the browser restyle all of its nodes. */
  private placeBoxes(boxes: HTMLElement[]) {
    const keep = new Set(boxes);
    for (const child of Array.from(this.graph.children)) {
      if (!keep.has(child as HTMLElement)) {
        child.remove();
      }
    }
    boxes.forEach((box, i) => {
      const current = this.graph.children[i];
      if (current !== box) {
        this.graph.insertBefore(box, current ?? null);
      }
    });
  }

  /** Classes on SVG nodes: new, selected, search match, collapsed owner. Returns matches. */
  private paintClasses(): number {
    const needle = this.search.trim().toLowerCase();
    const collapsedOwners = new Set<string>();
    for (const block of this.model.blocks) {
      if (block.owner && this.collapsed.has(block.id)) {
        collapsedOwners.add(block.owner);
      }
    }
    let matches = 0;
    // what a folded drawing shows for the matches and for the selected variable's writers
    // and readers: the op itself or the box of the group holding it
    const matchedBoxes = new Set<string>();
    const newBoxes = new Set<string>();
    const related = new Set<string>();
    if (this.folded) {
      for (const op of this.model.ops) {
        if (op.new) {
          newBoxes.add(this.drawnAs.get(op.id) ?? '');  // a box holding ops a cell added
        }
      }
      if (needle) {
        for (const op of this.model.ops) {
          if (matchesSearch(needle, op.id, op.type, undefined, op)) {
            matchedBoxes.add(this.drawnAs.get(op.id) ?? '');
          }
        }
      }
    }
    const selectedVar = this.selected ? this.index.vars.get(this.selected) : undefined;
    if (selectedVar) {
      for (const edge of [
        ...(this.index.edgesTo.get(selectedVar.id) ?? []),
        ...(this.index.edgesFrom.get(selectedVar.id) ?? [])
      ]) {
        const op = edge.src === selectedVar.id ? edge.dst : edge.src;
        related.add(this.drawnAs.get(op) ?? op);
      }
    }
    for (const { segment, box } of this.drawn) {
      box.querySelectorAll<SVGGElement>('g.node').forEach(g => {
        const id = segment.refs.get(g.id) ?? g.id;
        g.classList.toggle('fluid-nb-related', related.has(id));
        if (this.hierarchy.groups.has(id)) {
          const hit = matchedBoxes.has(id);
          g.classList.toggle('fluid-nb-new', newBoxes.has(id));
          g.classList.toggle('fluid-nb-match', hit);
          g.classList.toggle('fluid-nb-dim', !!needle && !hit);
          g.classList.toggle('fluid-nb-selected', false);
          return;
        }
        const op = this.index.ops.get(id);
        const v = op ? undefined : this.index.vars.get(id);
        const hit = !!needle && matchesSearch(needle, id, op?.type, v?.name, op);
        if (hit && !segment.refs.has(g.id)) {
          matches += 1;
        }
        g.classList.toggle('fluid-nb-new', !!op?.new);
        g.classList.toggle('fluid-nb-selected', id === this.selected);
        g.classList.toggle('fluid-nb-match', hit);
        g.classList.toggle('fluid-nb-dim', !!needle && !hit);
        g.classList.toggle('fluid-nb-collapsed', collapsedOwners.has(id));
      });
    }
    if (this.folded && needle) {
      // every match in the program counts, drawn or folded away
      matches = this.model.ops.filter(op => matchesSearch(needle, op.id, op.type, undefined, op))
        .length + this.model.vars.filter(v => matchesSearch(needle, v.id, undefined, v.name, undefined))
        .length;
    }
    this.matchesLabel.textContent = needle ? `${matches} found` : '';
    return matches;
  }

  private setZoom(zoom: number, byUser: boolean) {
    this.zoom = Math.min(4, Math.max(0.1, zoom));
    this.userZoomed = this.userZoomed || byUser;
    this.graph.querySelectorAll('svg').forEach(svg => this.scaleSvg(svg));
    this.element.dataset.zoom = this.zoom.toFixed(3);
  }

  private scaleSvg(svg: SVGSVGElement) {
    const box = svg.viewBox.baseVal;
    if (box && box.width) {
      svg.setAttribute('width', `${box.width * this.zoom}pt`);
      svg.setAttribute('height', `${box.height * this.zoom}pt`);
    }
  }

  private modelIdAt(target: EventTarget | null): string | null {
    const g = (target as Element | null)?.closest?.('g.node');
    if (!g) {
      return null;
    }
    for (const { segment } of this.drawn) {
      const ref = segment.refs.get(g.id);
      if (ref) {
        return ref;
      }
    }
    return g.id;
  }

  private readonly onClick = (ev: MouseEvent) => {
    const id = this.modelIdAt(ev.target);
    if (id && this.hierarchy.groups.has(id)) {
      void this.toggleGroup(id);
      return;
    }
    if (id) {
      this.select(id);
      return;
    }
    const cluster = (ev.target as Element | null)?.closest?.('g.cluster');
    const name = cluster?.querySelector('title')?.textContent ?? '';
    if (name.startsWith('cluster_g:')) {
      void this.toggleGroup(name.slice('cluster_'.length));
    } else if (name.startsWith('cluster_')) {
      void this.toggleBlock(name.slice('cluster_'.length));
    }
  };

  private readonly onDoubleClick = (ev: MouseEvent) => {
    const op = this.index.ops.get(this.modelIdAt(ev.target) ?? '');
    if (op && op.sub_blocks.length) {
      const collapse = !op.sub_blocks.every(b => this.collapsed.has(b));
      op.sub_blocks.forEach(b => (collapse ? this.collapsed.add(b) : this.collapsed.delete(b)));
      void this.enqueue();
    }
  };
}

/** A point on the page's performance timeline (the render benchmark reads them). */
function mark(name: string): void {
  if (typeof performance !== 'undefined' && performance.mark) {
    performance.mark(name);
  }
}

/** `CSS.escape` where there is one (ids such as `op:12` hold characters CSS gives meaning). */
function cssEscape(text: string): string {
  return typeof CSS !== 'undefined' && CSS.escape ? CSS.escape(text) : text.replace(/["\\]/g, '\\$&');
}

/** Figures to show, or null for none (an empty object from a widget trait is none). */
function figuresOf(data: unknown): IMemoryFigures | null {
  return isMemoryFigures(data) ? data : null;
}

function matchesSearch(
  needle: string,
  id: string,
  type: string | undefined,
  name: string | undefined,
  op: { inputs: object; outputs: object } | undefined
): boolean {
  if (id.toLowerCase() === needle) {
    return true;
  }
  if ((type ?? name ?? '').toLowerCase().includes(needle)) {
    return true;
  }
  if (op) {
    // an op also matches by the names of the variables it reads or writes
    const names = [...Object.values(op.inputs), ...Object.values(op.outputs)].flat() as string[];
    return names.some(n => n.toLowerCase() === needle);
  }
  return false;
}

/**
 * Draw `model` into `el` and return a handle for later deltas. The first render is
 * asynchronous (Graphviz loads once per page): await `handle.ready`.
 */
export function renderProgram(
  el: HTMLElement,
  model: IProgramModel,
  options: IRenderOptions = {}
): IProgramHandle {
  return new ProgramGraph(el, model, options);
}

/** `handle.applyDelta(delta)`, as a function (the standalone viewer's API). */
export function applyDelta(handle: IProgramHandle, delta: IProgramDelta): Promise<IRenderStats> {
  return handle.applyDelta(delta);
}
