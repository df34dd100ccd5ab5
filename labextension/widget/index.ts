/**
 * The anywidget front end of fluid_nb's widgets (ProgramView, TensorView, ScopeView,
 * StepperView, MemoryView, DistributedView). Kept small on purpose: it is saved in every widget's state, so the heavy
 * viewer (Graphviz in WebAssembly and the views) is loaded once per page from the Jupyter
 * server (`<base>/fluid-nb/static/viewer.js`) and used through `window.fluidNbViewer`.
 *
 * The program view's `_memory` trait (bytes allocated per op, or `{}`) tints its ops
 * (`handle.setMemory`), without a layout. A DistributedView's `_job` trait (a running job's
 * processes, or `{}`) is drawn above its graph, or alone (`_kind` `job`), by the small job
 * panel bundled here: a job without programs needs no Graphviz.
 *
 * Messages (custom, JSON):
 * - kernel -> front end: `{type: "delta", delta}` (apply to the shown program),
 *   `{type: "model", model}` (replace it);
 * - front end -> kernel: `{type: "select", id}`, `{type: "search", text}`,
 *   `{type: "need-model", revision}` (a delta did not fit the model shown here).
 * Clicks and searches go as messages rather than trait writes so that the front end never
 * has to send its (possibly large, locally updated) `_model` back to the kernel.
 */
import { applyDelta, DeltaMismatch } from '../src/delta';
import type { IProgramDelta, IProgramModel } from '../src/model';
import { renderJob } from './views/job';

/** The part of anywidget's model the views use. */
interface IWidgetModel {
  get(name: string): any;
  set(name: string, value: unknown): void;
  on(event: string, callback: (...args: any[]) => void): void;
  off(event: string, callback: (...args: any[]) => void): void;
  send(content: unknown): void;
  save_changes(): void;
}

/** A drawn program graph, as `renderProgram` returns it (see labextension/src/view.ts). */
interface IProgramHandle {
  readonly model: IProgramModel;
  applyDelta(delta: IProgramDelta): Promise<unknown>;
  setModel(model: IProgramModel): Promise<unknown>;
  select(id: string | null): void;
  setSearch(text: string): number;
  setMemory(figures: unknown): void;
  reveal(idOrText: string): Promise<string | null>;
  dispose(): void;
}

/** What `viewer.js` puts on `window`. */
interface IViewer {
  renderProgram(el: HTMLElement, model: IProgramModel, options?: Record<string, unknown>): IProgramHandle;
  renderTensor(el: HTMLElement, model: unknown): void;
  renderScope(el: HTMLElement, model: unknown): void;
  renderMemory(el: HTMLElement, model: unknown): void;
  renderStepper(el: HTMLElement, model: unknown, options?: Record<string, unknown>): {
    setStep(step: number): void;
    dispose(): void;
  };
}

declare global {
  interface Window {
    fluidNbViewer?: IViewer;
    fluidNbViewerLoading?: Promise<IViewer>;
  }
}

const VIEWER_PATH = 'fluid-nb/static/viewer.js';

/** The Jupyter server's base URL, from the page config JupyterLab (and Notebook 7) embed. */
function baseUrl(): string {
  const config = document.getElementById('jupyter-config-data');
  if (config && config.textContent) {
    try {
      const base = JSON.parse(config.textContent).baseUrl;
      if (typeof base === 'string' && base) {
        return base.endsWith('/') ? base : base + '/';
      }
    } catch {
      // not JSON: fall back to the root
    }
  }
  return '/';
}

/** The viewer, loaded once per page however many widgets (and copies of this module) ask. */
export function loadViewer(): Promise<IViewer> {
  if (window.fluidNbViewer) {
    return Promise.resolve(window.fluidNbViewer);
  }
  if (!window.fluidNbViewerLoading) {
    const url = baseUrl() + VIEWER_PATH;
    window.fluidNbViewerLoading = new Promise<IViewer>((resolve, reject) => {
      const script = document.createElement('script');
      script.src = url;
      script.async = true;
      script.onload = () =>
        window.fluidNbViewer
          ? resolve(window.fluidNbViewer)
          : reject(new Error(`fluid_nb: ${url} loaded but defined no viewer`));
      script.onerror = () => {
        window.fluidNbViewerLoading = undefined;
        reject(new Error(`fluid_nb: could not load ${url}; is the fluid_nb server extension ` +
          'enabled (jupyter server extension list)?'));
      };
      document.head.appendChild(script);
    });
  }
  return window.fluidNbViewerLoading;
}

function div(className: string, text?: string): HTMLDivElement {
  const node = document.createElement('div');
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

// --- the program view -------------------------------------------------------------------
function addedList(model: IProgramModel | undefined, into: HTMLElement): void {
  into.replaceChildren();
  const added = (model?.ops ?? []).filter(op => op.new);
  if (!added.length) {
    return;
  }
  into.append(`added by the last cell (${added.length}):`);
  for (const op of added.slice(0, 40)) {
    const code = document.createElement('code');
    code.textContent = op.type;
    code.dataset.op = op.id;
    into.appendChild(code);
  }
  if (added.length > 40) {
    into.append(`… ${added.length - 40} more`);
  }
}

/** The kernel's facts about the selected element (kernel, last run, value), shown at the end of
 * the graph's details panel when it has one (it redraws on every selection, so the facts of
 * an earlier selection never linger), else below the graph. */
function runtimeDetails(viewer: IViewer, details: any, graph: HTMLElement, fallback: HTMLElement): void {
  graph.querySelectorAll('.fluid-nb-runtime-facts').forEach(node => node.remove());
  fallback.replaceChildren();
  if (!details || !details.id) {
    return;
  }
  const box = div('fluid-nb-runtime-facts');
  box.dataset.id = details.id;
  if (details.error) {
    box.appendChild(div('fluid-nb-note', details.error));
  } else if (details.kind === 'op') {
    const lastRun = details.last_run_ms === null || details.last_run_ms === undefined
      ? 'not recorded' : `${details.last_run_ms} ms`;
    const line = div('fluid-nb-runtime-op', `kernel: ${details.kernel ?? 'none'} · device: ${details.device} · last run: ${lastRun}`);
    line.dataset.id = details.id;
    box.appendChild(line);
    if (details.native) {
      // a compiled program's view: the op's generated function, or why it has none
      const native = div('fluid-nb-runtime-native');
      native.dataset.id = details.id;
      if (details.native.function) {
        native.appendChild(div('fluid-nb-native-name', `native function: ${details.native.function}`));
        const code = document.createElement('pre');
        code.className = 'fluid-nb-native-source';
        code.textContent = details.native.source;
        native.appendChild(code);
      } else {
        native.appendChild(div('fluid-nb-note', `native: ${details.native.reason}`));
      }
      box.appendChild(native);
    }
  } else if (details.value) {
    const host = div('fluid-nb-runtime-value');
    host.dataset.id = details.id;
    box.appendChild(host);
    viewer.renderTensor(host, details.value);
  } else if (details.value_note) {
    box.appendChild(div('fluid-nb-note', `value: ${details.value_note}`));
  }
  const panel = graph.querySelector('.fluid-nb-program-details');
  (panel ?? fallback).appendChild(box);
}

const WIDGET_CSS = `
.fluid-nb-added { display: flex; flex-wrap: wrap; gap: 3px; align-items: center; margin: 2px 0 6px;
  font-size: 12px; color: var(--jp-ui-font-color1, #222); }
.fluid-nb-added code { background: var(--jp-warn-color3, #fff3c4); padding: 0 4px; border-radius: 3px;
  font-family: var(--jp-code-font-family, monospace); }
.fluid-nb-runtime-facts { margin-top: 6px; padding-top: 4px; font-size: 12px;
  border-top: 1px solid var(--jp-border-color2, #ddd); }
.fluid-nb-error { color: var(--jp-error-color1, #c62828); }
.fluid-nb-native-source { max-height: 240px; overflow: auto; margin: 4px 0 0; padding: 4px;
  font-size: 11px; background: var(--jp-layout-color2, #f5f5f5); }
`;

function ensureWidgetStyle(): void {
  if (!document.getElementById('fluid-nb-widget-style')) {
    const style = document.createElement('style');
    style.id = 'fluid-nb-widget-style';
    style.textContent = WIDGET_CSS;
    document.head.appendChild(style);
  }
}

/** Draw the `_job` trait into `host` now and whenever it changes; the cleanup. */
function followJob(model: IWidgetModel, host: HTMLElement): () => void {
  const draw = () => {
    const job = model.get('_job');
    if (job && job.processes) {
      renderJob(host, job);
    } else {
      host.replaceChildren();
    }
  };
  draw();
  model.on('change:_job', draw);
  return () => model.off('change:_job', draw);
}

async function renderProgramView(model: IWidgetModel, el: HTMLElement): Promise<() => void> {
  const viewer = await loadViewer();
  ensureWidgetStyle();
  const root = div('fluid-nb-view fluid-nb-program-widget');
  const job = div('fluid-nb-job-host');
  const added = div('fluid-nb-added');
  const graph = div('fluid-nb-graph-host');
  const runtime = div('fluid-nb-runtime');
  root.append(job, added, graph, runtime);
  el.replaceChildren(root);
  const unfollowJob = followJob(model, job);

  const handle = viewer.renderProgram(graph, model.get('_model'), {
    title: model.get('title') || undefined,
    selected: model.get('selected') || null,
    search: model.get('search') ?? '',
    reveal: model.get('reveal') || undefined,
    memory: model.get('_memory') ?? null,
    onSelect: (selection: { id: string } | null) => model.send({ type: 'select', id: selection?.id ?? '' }),
    onSearch: (text: string) => model.send({ type: 'search', text })
  });
  addedList(handle.model, added);

  // out of step: redraw from the model's own copy, which the initialize hook keeps current
  // (and which asks the kernel for the full model when it is out of step too)
  const resync = () => handle.setModel(model.get('_model')).then(() => addedList(handle.model, added));
  const onMessage = (msg: any) => {
    if (msg?.type === 'delta') {
      const delta = msg.delta as IProgramDelta;
      if (delta.base !== handle.model.revision) {
        resync();
        return;
      }
      handle.applyDelta(delta).catch(resync);
      addedList(handle.model, added);
    } else if (msg?.type === 'model' && msg.model.revision !== handle.model.revision) {
      handle.setModel(msg.model);
      addedList(handle.model, added);
    }
  };
  const onDetails = () => runtimeDetails(viewer, model.get('_details'), graph, runtime);
  const onSelected = () => handle.select(model.get('selected') || null);
  const onSearch = () => handle.setSearch(model.get('search') ?? '');
  const onReveal = () => void (model.get('reveal') && handle.reveal(model.get('reveal')));
  const onMemory = () => handle.setMemory(model.get('_memory') ?? null);
  model.on('msg:custom', onMessage);
  model.on('change:_memory', onMemory);
  model.on('change:_details', onDetails);
  model.on('change:selected', onSelected);
  model.on('change:search', onSearch);
  model.on('change:reveal', onReveal);
  onDetails();
  return () => {
    unfollowJob();
    model.off('msg:custom', onMessage);
    model.off('change:_details', onDetails);
    model.off('change:selected', onSelected);
    model.off('change:search', onSearch);
    model.off('change:reveal', onReveal);
    model.off('change:_memory', onMemory);
    handle.dispose();
  };
}

/** Keep the model's own `_model` current (for views created later and for saved state):
 * set locally only, never saved back to the kernel, which already has it. */
function followDeltas(model: IWidgetModel): () => void {
  const onMessage = (msg: any) => {
    const current: IProgramModel = model.get('_model');
    if (msg?.type === 'delta') {
      try {
        model.set('_model', applyDelta(current, msg.delta));
      } catch (error) {
        if (!(error instanceof DeltaMismatch)) {
          throw error;
        }
        model.send({ type: 'need-model', revision: current.revision });
      }
    } else if (msg?.type === 'model') {
      model.set('_model', msg.model);
    }
  };
  model.on('msg:custom', onMessage);
  return () => model.off('msg:custom', onMessage);
}

// --- the other views ---------------------------------------------------------------------
async function renderStateView(model: IWidgetModel, el: HTMLElement, kind: string): Promise<() => void> {
  const viewer = await loadViewer();
  const host = div('fluid-nb-widget-host');
  el.replaceChildren(host);
  if (kind === 'stepper') {
    const options = () => ({
      step: model.get('step'),
      onStep: (step: number) => {
        model.set('step', step);
        model.save_changes();
      }
    });
    let stepper = viewer.renderStepper(host, model.get('_model'), options());
    const onStep = () => stepper.setStep(model.get('step'));
    const onModel = () => {
      stepper.dispose();
      stepper = viewer.renderStepper(host, model.get('_model'), options());
    };
    model.on('change:step', onStep);
    model.on('change:_model', onModel);
    return () => {
      model.off('change:step', onStep);
      model.off('change:_model', onModel);
      stepper.dispose();
    };
  }
  const renderers: { [kind: string]: (el: HTMLElement, model: unknown) => void } = {
    tensor: viewer.renderTensor, scope: viewer.renderScope, memory: viewer.renderMemory
  };
  const draw = () => (renderers[kind] ?? viewer.renderScope)(host, model.get('_model'));
  draw();
  model.on('change:_model', draw);
  return () => model.off('change:_model', draw);
}

export default {
  initialize({ model }: { model: IWidgetModel }) {
    return model.get('_kind') === 'program' ? followDeltas(model) : undefined;
  },
  async render({ model, el }: { model: IWidgetModel; el: HTMLElement }) {
    const kind = model.get('_kind');
    try {
      if (kind === 'job') {
        const host = div('fluid-nb-job-host');
        el.replaceChildren(host);
        return followJob(model, host);
      }
      return kind === 'program' ? await renderProgramView(model, el) : await renderStateView(model, el, kind);
    } catch (error) {
      el.replaceChildren(div('fluid-nb-error', String(error instanceof Error ? error.message : error)));
      return undefined;
    }
  }
};
