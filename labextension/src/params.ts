/**
 * Opens Paddle parameter files (`*.pdiparams`, `__params__`) from the file browser as a table
 * of their tensors: name, dtype, shape, min/max/mean/std and a histogram of the values per
 * tensor. The bytes are tensor records; the server extension decodes them with fluid_nb's own
 * reader (`GET <base>/fluid-nb/api/params?path=<path>` returns
 * `fluid_nb.viz.params_table.params_model`'s table, bins counted in Python).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { FileModelView, FileViewFactory, fetchFileModel } from './file_view';

/** The file type name of combined parameter files. */
export const PARAMS_FILE_TYPE = 'fluid-nb-params';
/** The viewer's factory name (shown in "Open With"). */
export const PARAMS_VIEWER = 'Fluid parameters table';

/** One tensor of the file. */
export interface IParamsRow {
  name: string;
  dtype: string;
  shape: number[];
  size: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  histogram: number[] | null;
  histogram_range: [number, number] | null;
  non_finite?: number;
}

/** The table of a parameter file (`format: "fluid-nb.params"`). */
export interface IParamsModel {
  format: 'fluid-nb.params';
  title: string;
  kind: 'combined' | 'directory';
  names_from: string | null;
  bins: number;
  tensors: number;
  values: number;
  rows: IParamsRow[];
}

/** Whether `data` is a parameters table. */
export function isParamsModel(data: unknown): data is IParamsModel {
  const model = data as IParamsModel;
  return !!model && model.format === 'fluid-nb.params' && Array.isArray(model.rows);
}

/** Fetch the table of a parameter file, by its path relative to the server root. */
export function fetchParamsModel(
  path: string,
  settings?: ServerConnection.ISettings
): Promise<IParamsModel> {
  return fetchFileModel('params', path, isParamsModel, 'a parameters table', settings);
}

/** A number as Python's `format(value, '.4g')` writes it (the CLI's table). */
export function g4(value: number | null): string {
  if (value === null) {
    return '';
  }
  if (value === 0) {
    return '0';
  }
  const [mantissa, power] = value.toExponential(3).split('e');
  const exponent = Number(power);
  const trim = (text: string) => (text.includes('.') ? text.replace(/\.?0+$/, '') : text);
  if (exponent < -4 || exponent >= 4) {
    const digits = String(Math.abs(exponent)).padStart(2, '0');
    return `${trim(mantissa)}e${exponent < 0 ? '-' : '+'}${digits}`;
  }
  return trim(value.toFixed(3 - exponent));
}

const SVG = 'http://www.w3.org/2000/svg';
const BAR_W = 6;
const BAR_H = 28;

/** The histogram as inline SVG: a bar per bin, its height its share of the tallest bin. */
export function histogramSvg(row: IParamsRow): SVGSVGElement | null {
  const counts = row.histogram;
  if (!counts || !counts.length) {
    return null;
  }
  const top = Math.max(...counts, 1);
  const chart = document.createElementNS(SVG, 'svg');
  chart.setAttribute('class', 'fluid-nb-params-histogram');
  chart.setAttribute('width', String(counts.length * BAR_W));
  chart.setAttribute('height', String(BAR_H));
  chart.setAttribute('viewBox', `0 0 ${counts.length * BAR_W} ${BAR_H}`);
  const [low, high] = row.histogram_range ?? [row.min ?? 0, row.max ?? 0];
  const width = (high - low) / counts.length;
  counts.forEach((count, k) => {
    const height = count ? Math.max((BAR_H - 2) * count / top, 1.5) : 0;
    const bar = document.createElementNS(SVG, 'rect');
    bar.setAttribute('class', 'fluid-nb-params-bar');
    bar.setAttribute('x', String(k * BAR_W + 0.5));
    bar.setAttribute('y', String(BAR_H - height));
    bar.setAttribute('width', String(BAR_W - 1));
    bar.setAttribute('height', String(height));
    bar.dataset.count = String(count);
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `[${g4(low + k * width)}, ${g4(low + (k + 1) * width)}${k === counts.length - 1 ? ']' : ')'}: ${count}`;
    bar.appendChild(title);
    chart.appendChild(bar);
  });
  return chart;
}

const COLUMNS = ['name', 'dtype', 'shape', 'size', 'min', 'max', 'mean', 'std', 'histogram'];

function rowOf(row: IParamsRow): HTMLTableRowElement {
  const tr = el('tr');
  tr.dataset.name = row.name;
  const cells: (string | Node)[] = [
    el('code', '', row.name), row.dtype, row.shape.length ? row.shape.join(' × ') : 'scalar',
    row.size.toLocaleString('en-US'), g4(row.min), g4(row.max), g4(row.mean), g4(row.std)
  ];
  const histogram = el('span', 'fluid-nb-params-histogram-cell');
  const chart = histogramSvg(row);
  if (chart) {
    histogram.appendChild(chart);
  }
  if (row.non_finite) {
    histogram.appendChild(el('span', 'fluid-nb-params-note', ` ${row.non_finite} not finite`));
  } else if (!chart) {
    histogram.appendChild(el('span', 'fluid-nb-params-note', row.size ? 'not numeric' : 'empty'));
  }
  cells.push(histogram);
  cells.forEach((cell, k) => {
    const td = el('td');
    td.dataset.column = COLUMNS[k];
    td.append(cell);
    tr.appendChild(td);
  });
  return tr;
}

/** Draw `model` into `host` (replacing what was there): a summary, a name filter, the table. */
export function renderParams(host: HTMLElement, model: IParamsModel): void {
  ensureParamsStyle();
  host.replaceChildren();
  const root = el('div', 'fluid-nb-params-view');
  const names = model.kind === 'directory'
    ? 'one file per tensor, named after it'
    : model.names_from
      ? `names from ${model.names_from}`
      : 'records numbered: no program beside the file names them';
  root.appendChild(el('div', 'fluid-nb-params-head',
    `${model.title}: ${model.tensors} tensors, ${model.values.toLocaleString('en-US')} values (${names}); ` +
    `histograms of ${model.bins} bins from min to max`));
  const filter = el('input', 'fluid-nb-params-filter');
  filter.type = 'search';
  filter.placeholder = 'filter by name';
  root.appendChild(filter);
  const table = el('table', 'fluid-nb-params-table');
  const head = el('tr');
  for (const column of COLUMNS) {
    head.appendChild(el('th', '', column));
  }
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  const rows = model.rows.map(rowOf);
  body.append(...rows);
  filter.addEventListener('input', () => {
    const text = filter.value.trim().toLowerCase();
    model.rows.forEach((row, k) => {
      rows[k].hidden = !!text && !row.name.toLowerCase().includes(text);
    });
  });
  root.appendChild(table);
  host.appendChild(root);
}

const CSS = `
.fluid-nb-params-file { overflow: auto; padding: 8px; }
.fluid-nb-params-head { margin: 0 0 6px; font-weight: 600; color: var(--jp-ui-font-color1, #222); }
.fluid-nb-params-filter { margin: 0 0 6px; width: 16em; }
.fluid-nb-params-table { border-collapse: collapse; font-size: var(--jp-ui-font-size1, 13px); }
.fluid-nb-params-table th, .fluid-nb-params-table td { border: 1px solid var(--jp-border-color2, #ddd);
  padding: 2px 8px; text-align: left; vertical-align: middle; }
.fluid-nb-params-table td[data-column="size"], .fluid-nb-params-table td[data-column="min"],
.fluid-nb-params-table td[data-column="max"], .fluid-nb-params-table td[data-column="mean"],
.fluid-nb-params-table td[data-column="std"] { text-align: right; font-variant-numeric: tabular-nums; }
.fluid-nb-params-table th { background: var(--jp-layout-color2, #f3f3f3); position: sticky; top: 0; }
.fluid-nb-params-histogram { display: inline-block; vertical-align: middle; }
.fluid-nb-params-bar { fill: var(--jp-brand-color1, #1976d2); }
.fluid-nb-params-note { color: var(--jp-ui-font-color2, #666); }
.fluid-nb-params-error { padding: 8px; color: var(--jp-error-color1, #b91c1c); white-space: pre-wrap; }
`;

function ensureParamsStyle(): void {
  if (!document.getElementById('fluid-nb-params-style')) {
    const style = document.createElement('style');
    style.id = 'fluid-nb-params-style';
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}

/** The content of a parameter file tab: the table, or the error that stopped it. */
class ParamsFileView extends FileModelView<IParamsModel> {
  constructor(context: DocumentRegistry.Context) {
    super(context, 'fluid-nb-params-file', 'fluid-nb-params-error');
    ensureParamsStyle();
  }

  protected fetch(path: string): Promise<IParamsModel> {
    return fetchParamsModel(path);
  }

  protected draw(model: IParamsModel): void {
    renderParams(this.node, model);
  }
}

/**
 * A folder of per-variable parameter files (Fluid's `save_params`: one file per tensor, no
 * extension) as one table, in a main-area tab; a folder is no document, so this is a
 * command of the file browser's context menu rather than a viewer.
 */
class ParamsFolderView extends Widget {
  constructor(path: string) {
    super();
    this.id = `fluid-nb-params-folder-${path}`;
    this.addClass('fluid-nb-params-file');
    this.title.label = `${path.split('/').pop() || path} (parameters)`;
    this.title.caption = path;
    this.title.closable = true;
    ensureParamsStyle();
    fetchParamsModel(path).then(
      model => renderParams(this.node, model),
      err => {
        const reason = err instanceof Error ? err.message : String(err);
        this.node.replaceChildren(el('div', 'fluid-nb-params-error', `Cannot show ${path}: ${reason}`));
      }
    );
  }
}

/** The folder selected in the default file browser, if one is (read without the file
 * browser package: its widget in the left area answers `selectedItems()`). */
function selectedFolder(app: JupyterFrontEnd): string | null {
  const browser = Array.from(app.shell.widgets('left')).find(w => w.id === 'filebrowser') as
    | (Widget & { selectedItems?: () => Iterable<{ type: string; path: string }> })
    | undefined;
  const items = browser?.selectedItems ? Array.from(browser.selectedItems()) : [];
  return items.length === 1 && items[0].type === 'directory' ? items[0].path : null;
}

/** The command that opens a folder's parameter files as one table. */
export const OPEN_PARAMS_FOLDER = 'fluid-nb:open-params-folder';

/** The plugin: the file type of combined parameter files and their table viewer. */
export const paramsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'fluid-nb-labext:params-file-viewer',
  description: 'Opens .pdiparams and __params__ parameter files as a table of their tensors.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    app.commands.addCommand(OPEN_PARAMS_FOLDER, {
      label: 'Open as Parameters Table',
      caption: 'Show the parameter files of this folder as one table of tensors',
      isVisible: () => selectedFolder(app) !== null,
      execute: args => {
        const path = (args.path as string | undefined) ?? selectedFolder(app);
        if (path === null || path === undefined) {
          return;
        }
        const id = `fluid-nb-params-folder-${path}`;
        const open = Array.from(app.shell.widgets('main')).find(w => w.id === id);
        if (open) {
          app.shell.activateById(id);
          return;
        }
        app.shell.add(new ParamsFolderView(path), 'main');
        app.shell.activateById(id);
      }
    });
    app.contextMenu.addItem({
      command: OPEN_PARAMS_FOLDER,
      selector: '.jp-DirListing-item[data-isdir="true"]',
      rank: 3
    });
    app.docRegistry.addFileType({
      name: PARAMS_FILE_TYPE,
      displayName: 'Paddle parameters',
      extensions: ['.pdiparams'],
      pattern: '^__params__$',
      mimeTypes: ['application/x-paddle-params'],
      fileFormat: 'base64',
      contentType: 'file'
    });
    app.docRegistry.addWidgetFactory(
      new FileViewFactory(
        {
          name: PARAMS_VIEWER,
          label: 'Parameters table',
          modelName: 'base64',
          fileTypes: [PARAMS_FILE_TYPE],
          defaultFor: [PARAMS_FILE_TYPE],
          readOnly: true
        },
        context => new ParamsFileView(context)
      )
    );
  }
};
